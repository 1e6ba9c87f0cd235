// Firmware built on generated headers as a firmware project builds it (C++17, no exceptions, no
// RTTI, dlavm::runtime alone): every entry point of some of tests/deploy's models, so that the
// object holds what a firmware image would link. cmake/check_firmware_symbols.cmake reads the
// symbols it needs: no heap, no exceptions, and printf-family functions only where the header
// was emitted with `debug` (the MLP, DLAVM_SYMBOLS_DEBUG).
#include <cstddef>
#include <cstdint>

#ifdef DLAVM_SYMBOLS_DEBUG
#include "mlp.hpp"
#else
#include "float_ops.hpp"
#include "llm_layer.hpp"
#include "resnet.hpp"
#endif

using dlavm::runtime::ModelStatus;

// open, load the weights, place the streams from the header or from the insts file
template <class Session, class Open, class Load, class Prepare, class PrepareFile>
ModelStatus start(Session& s, Open open, Load load, Prepare prepare, PrepareFile prepare_file,
                  const std::uint8_t* weights, std::size_t weights_size, const std::uint8_t* insts,
                  std::size_t insts_size) {
  ModelStatus st = open(s);
  if (st == ModelStatus::Ok) st = load(s, weights, weights_size);
  if (st == ModelStatus::Ok)
    st = insts != nullptr ? prepare_file(s, insts, insts_size) : prepare(s);
  return st;
}

#ifdef DLAVM_SYMBOLS_DEBUG
ModelStatus mlp_start(mlp::Session& s, const std::uint8_t* w, std::size_t wn, const std::uint8_t* i,
                      std::size_t in) {
  return start(
      s, mlp::open, mlp::load_params, [](mlp::Session& x) { return mlp::prepare(x); },
      [](mlp::Session& x, const std::uint8_t* f, std::size_t n) { return mlp::prepare(x, f, n); },
      w, wn, i, in);
}
ModelStatus mlp_run(mlp::Session& s, mlp::Workspace& w, std::int64_t batch) {
  return mlp::run(s, w, batch);
}
#else
ModelStatus resnet_start(resnet::Session& s, const std::uint8_t* w, std::size_t wn,
                         const std::uint8_t* i, std::size_t in) {
  return start(
      s, resnet::open, resnet::load_params, [](resnet::Session& x) { return resnet::prepare(x); },
      [](resnet::Session& x, const std::uint8_t* f, std::size_t n) {
        return resnet::prepare(x, f, n);
      },
      w, wn, i, in);
}
ModelStatus resnet_run(resnet::Session& s, resnet::Workspace& w) { return resnet::run(s, w); }
ModelStatus float_ops_start(float_ops::Session& s, const std::uint8_t* w, std::size_t wn,
                            const std::uint8_t* i, std::size_t in) {
  return start(
      s, float_ops::open, float_ops::load_params,
      [](float_ops::Session& x) { return float_ops::prepare(x); },
      [](float_ops::Session& x, const std::uint8_t* f, std::size_t n) {
        return float_ops::prepare(x, f, n);
      },
      w, wn, i, in);
}
ModelStatus float_ops_run(float_ops::Session& s, float_ops::Workspace& w, std::int64_t n) {
  return float_ops::run(s, w, n);
}
ModelStatus llm_layer_start(llm_layer::Session& s, const std::uint8_t* w, std::size_t wn,
                            const std::uint8_t* i, std::size_t in) {
  return start(
      s, llm_layer::open, llm_layer::load_params,
      [](llm_layer::Session& x) { return llm_layer::prepare(x); },
      [](llm_layer::Session& x, const std::uint8_t* f, std::size_t n) {
        return llm_layer::prepare(x, f, n);
      },
      w, wn, i, in);
}
ModelStatus llm_layer_run(llm_layer::Session& s, llm_layer::Workspace& w, std::int64_t token) {
  return llm_layer::run(s, w, token);
}
#endif

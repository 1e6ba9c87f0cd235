// The ONNX importer's fuzz target, apart from fuzz/targets.hpp (whose run() and contract it
// shares) because it needs the importer library, dlavm::onnx (built with DLAVM_WITH_ONNX, and
// linking protobuf): fuzz/CMakeLists.txt builds fuzz_onnx, and tests/fuzz_replay replays
// fuzz/corpus/onnx, only when that library exists (DLAVM_FUZZ_ONNX).
//
//   onnx  a model file's bytes: onnx::import, with ranges for the dim_params "batch" (1 to 4),
//         "seq" (a point, 3) and "bad" (min > max: a ValueError) and no others (any other
//         name is a ValueError). An accepted model is typed for the default VTA target; when
//         its QDQ nodes fold, the unfolded import, where it types too, gives the same result
//         types; and a small model (every value at most kMaxElements elements at its dims'
//         maxima, at most kMaxNodes nodes) is built, its module's results of the types
//         infer_type gave. Messages may be longer than kMaxMessage: onnx_max_message.
// The seeds of fuzz/corpus/onnx are models of ONNX's node tests (Debian's libonnx-testdata) and
// models written as text in fuzz/seeds/onnx, with the inputs that found bugs (bug_*):
//   protoc -I/usr/include --encode=onnx.ModelProto onnx/onnx.proto < x.textproto > x.onnx
#pragma once

#include <dlavm/graph/build.hpp>
#include <dlavm/graph/infer_type.hpp>
#include <dlavm/graph/node.hpp>
#include <dlavm/graph/place.hpp>
#include <dlavm/graph/target.hpp>
#include <dlavm/ne/bounds.hpp>
#include <dlavm/onnx/import.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "targets.hpp"
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace dlavm_fuzz {

inline constexpr std::uint64_t kMaxElements = std::uint64_t{1} << 14;
inline constexpr std::size_t kMaxNodes = 32;

// Whether building `typed` is cheap: few nodes, each value small at its dims' maxima.
inline bool small_model(const dlavm::graph::Function& typed) {
  const auto nodes = dlavm::graph::post_order(typed.results());
  if (nodes.size() > kMaxNodes) return false;
  for (const auto& n : nodes) {
    if (!n.has_type()) return false;
    std::uint64_t elements = 1;
    for (const auto& d : n.type().shape) {
      const auto max = dlavm::ne::bounds(d).max;
      if (max < 1 || static_cast<std::uint64_t>(max) > kMaxElements) return false;
      elements *= static_cast<std::uint64_t>(max);
      if (elements > kMaxElements) return false;
    }
  }
  return true;
}

// The importer's messages quote the model's names, as long as the model makes them, and one
// lists every node it refuses, with the reason: bounded by the input, not by kMaxMessage. A
// refused node of a few bytes costs a line naming it and saying why.
inline constexpr std::size_t kMessageBytesPerInputByte = 16;
inline std::size_t onnx_max_message(std::size_t input_bytes) {
  return kMaxMessage + kMessageBytesPerInputByte * input_bytes;
}

inline std::string type_string(const dlavm::graph::TensorType& t) {
  return fmt::format("{} [{}]", t.dtype, fmt::join(t.shape, ", "));
}

inline dlavm::onnx::ImportOptions onnx_options(bool fold_qdq) {
  return {.dims = {{"batch", {1, 4}}, {"seq", {3, 3}}, {"bad", {3, 1}}}, .fold_qdq = fold_qdq};
}

inline void onnx(std::span<const std::uint8_t> data) {
  namespace graph = dlavm::graph;
  const graph::Target target;
  const auto fn = dlavm::onnx::import(data, onnx_options(true), "fuzz.onnx");
  const auto typed = graph::infer_type(fn, target);
  const auto& results = typed.results();
  require(results.size() == fn.results().size(), "infer_type: a result lost or added");
  for (const auto& r : results) require(r.has_type(), "infer_type: a result without a type");
  // QDQ folding keeps the result types: compared, as printed (each import makes its own dim
  // variables), where the unfolded graph imports and types too
  try {
    const auto unfolded =
        graph::infer_type(dlavm::onnx::import(data, onnx_options(false), "fuzz.onnx"), target);
    require(unfolded.results().size() == results.size(), "fold_qdq: result count differs");
    for (std::size_t i = 0; i < results.size(); ++i) {
      const auto folded_type = type_string(results[i].type());
      const auto unfolded_type = type_string(unfolded.results()[i].type());
      require(folded_type == unfolded_type,
              fmt::format("fold_qdq: result {} is {} folded, {} unfolded", i, folded_type,
                          unfolded_type));
    }
  } catch (const dlavm::Error&) {
    // the unfolded graph may be refused (its float sums, a type rule): nothing to compare
  }
  if (!small_model(typed)) return;
  const auto mod = graph::build(typed, target);
  const auto sig = mod.signature();
  require(sig.results.size() == results.size(), "build: result count differs from infer_type");
  for (std::size_t i = 0; i < results.size(); ++i) {
    const auto& v = mod.values().at(sig.results[i]);
    require(graph::same_type({v.logical, v.dtype}, results[i].type()),
            fmt::format("build: result {} is {}, infer_type gave {}", i,
                        type_string({v.logical, v.dtype}), type_string(results[i].type())));
  }
}

}  // namespace dlavm_fuzz

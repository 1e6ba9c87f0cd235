// A model file as a user brings it: its import options, inputs and dim values from command-line
// words, then imported, built for the default target and run on the host. What
// tests/onnx/real_models/run_model.cpp (the real-model comparison with ONNX Runtime, run.sh) and
// bench/onnx/real_model.cpp (the host run against ONNX Runtime's) share.
//
//   MODEL.onnx [--dim NAME=MIN:MAX:VALUE]... [--shape NAME=D0xD1...]... [--const NAME=INT]...
//              [--input NAME=D0xD1...]...
//
// --dim gives a dim_param's range and the value it takes in the run; --shape fixes an input's
// shape (ImportOptions::shapes); --const makes an int64 scalar input a constant; --input is
// a float32 input of that shape, uniform in [0, 1) from a seed of its position.
#pragma once

#include <dlavm/dlavm.hpp>
#include <dlavm/onnx/import.hpp>

#include <fmt/format.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace model_run {

struct Spec {
  std::string path;
  dlavm::onnx::ImportOptions options;
  std::vector<std::pair<std::string, std::int64_t>> dims;  // the run's value of each dim
  std::vector<std::pair<std::string, dlavm::te::NDArray>> inputs;
};

// "1x3x224x224" with sep 'x', "1:64:8" with sep ':'
inline std::vector<std::int64_t> parse_ints(std::string_view text, char sep, std::string_view arg) {
  std::vector<std::int64_t> out;
  std::size_t at = 0;
  while (at <= text.size()) {
    const auto end = std::min(text.find(sep, at), text.size());
    try {
      out.push_back(std::stoll(std::string(text.substr(at, end - at))));
    } catch (const std::exception&) {
      throw dlavm::ValueError(fmt::format("'{}': '{}' is not a list of integers", arg, text));
    }
    at = end + 1;
  }
  return out;
}

// words: the model path, then the options above
inline Spec parse(const std::vector<std::string>& words) {
  if (words.empty()) throw dlavm::ValueError("no model file given");
  Spec s;
  s.path = words[0];
  for (std::size_t i = 1; i < words.size(); ++i) {
    const std::string& flag = words[i];
    if (i + 1 >= words.size())
      throw dlavm::ValueError(fmt::format("'{}' needs a value after it", flag));
    const std::string arg = words[++i];
    const auto eq = arg.find('=');
    if (eq == std::string::npos || eq == 0)
      throw dlavm::ValueError(fmt::format("{} '{}': expected NAME=...", flag, arg));
    const std::string name = arg.substr(0, eq), value = arg.substr(eq + 1);
    if (flag == "--dim") {
      const auto v = parse_ints(value, ':', arg);
      if (v.size() != 3)
        throw dlavm::ValueError(fmt::format("--dim '{}': expected MIN:MAX:VALUE", arg));
      s.options.dims[name] = {v[0], v[1]};
      // a range of one value imports as that constant: the module has no such dim to bind
      // (the executor refuses a binding of a name that is no dim of the module)
      if (v[0] != v[1]) s.dims.emplace_back(name, v[2]);
    } else if (flag == "--shape") {
      s.options.shapes[name] = parse_ints(value, 'x', arg);
    } else if (flag == "--const") {
      dlavm::te::NDArray c(dlavm::DType::int64(), {});
      c.set_flat(0, parse_ints(value, ':', arg).at(0));
      s.options.constants[name] = c;
    } else if (flag == "--input") {
      const auto seed = static_cast<std::uint64_t>(s.inputs.size() + 1);
      s.inputs.emplace_back(
          name, dlavm::te::NDArray::random_float(parse_ints(value, 'x', arg), seed, 0.0, 1.0));
    } else {
      throw dlavm::ValueError(
          fmt::format("unknown option '{}' (--dim, --shape, --const, --input)", flag));
    }
  }
  return s;
}

inline dlavm::graph::Function import(const Spec& s) {
  return dlavm::graph::infer_type(dlavm::onnx::import(s.path, s.options), dlavm::graph::Target{});
}

// The model built for the default target, with an executor on a simulated VTA (a float model
// runs wholly on the host).
class Runner {
 public:
  explicit Runner(const Spec& s)
      : spec_(s),
        module_(dlavm::graph::build(import(s), target_, {.name = "model"})),
        device_(target_.env.config),
        executor_(module_, device_) {
    for (const auto& [name, array] : spec_.inputs) named_.push_back({name, array});
    for (const auto& [name, value] : spec_.dims) bindings_.push_back({name, value});
  }
  std::vector<dlavm::te::NDArray> run() { return executor_.run(named_, bindings_); }
  const dlavm::graph::Executor& executor() const { return executor_; }

 private:
  const Spec& spec_;
  dlavm::graph::Target target_;
  dlavm::graph::Module module_;
  dlavm::vta::SimDevice device_;
  dlavm::graph::Executor executor_;
  std::vector<dlavm::graph::NamedArray> named_;
  std::vector<dlavm::ne::Binding> bindings_;
};

}  // namespace model_run

// Imports a model file, runs it on the host with inputs from seeds, and writes each input and
// output as raw little-endian arrays (float32, or int64 for integers) for
// tests/onnx/real_models/ort_compare.js to hold against ONNX Runtime
// (tests/onnx/real_models/run.sh).
//   onnx_run_model OUTDIR MODEL.onnx [options of tests/onnx/real_models/model_run.hpp]
#include "model_run.hpp"
#include <chrono>
#include <fstream>

namespace {

void write(const std::string& path, const dlavm::te::NDArray& a) {
  std::ofstream out(path, std::ios::binary);
  if (a.dtype().is_float())
    out.write(reinterpret_cast<const char*>(a.fdata().data()),
              static_cast<std::streamsize>(a.size() * sizeof(float)));
  else
    out.write(reinterpret_cast<const char*>(a.data().data()),
              static_cast<std::streamsize>(a.size() * sizeof(std::int64_t)));
  if (!out) throw dlavm::ValueError(fmt::format("cannot write '{}'", path));
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc < 3) {
    fmt::print(stderr, "usage: {} OUTDIR MODEL.onnx [--dim|--shape|--const|--input NAME=...]...\n",
               argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  const auto spec = model_run::parse(std::vector<std::string>(argv + 2, argv + argc));
  const auto t0 = std::chrono::steady_clock::now();
  model_run::Runner runner(spec);
  const auto t1 = std::chrono::steady_clock::now();
  const auto outs = runner.run();
  const auto t2 = std::chrono::steady_clock::now();
  for (const auto& [name, array] : spec.inputs)
    write(fmt::format("{}/in_{}.bin", dir, name), array);
  for (std::size_t k = 0; k < outs.size(); ++k)
    write(fmt::format("{}/out_{}.bin", dir, k), outs[k]);
  const auto ms = [](auto a, auto b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
  };
  fmt::print("dlavm: import and build {:.0f} ms, first run {:.0f} ms, {} outputs\n", ms(t0, t1),
             ms(t1, t2), outs.size());
  return 0;
} catch (const dlavm::Error& e) {
  fmt::print(stderr, "FAIL: {}\n", e.what());
  return 1;
}

// The fixture of tests/cli/run.sh: a small CNN with a symbolic batch as a float ONNX model
// (OUTDIR/float.onnx) with four calibration samples (OUTDIR/calib/<k>.npy) and one of the wrong
// size (OUTDIR/calib_bad/0.npy), the CNN quantized by dlavm::quantize and written as an ONNX
// model (OUTDIR/model.onnx), an input batch of two
// (OUTDIR/image.npy), the same batch as int8 (OUTDIR/image_int8.npy, a wrong dtype), a batch
// of the wrong image size (OUTDIR/image_small.npy), and the model's output on the input as
// the reference executor computes it from the ONNX file (OUTDIR/want.npy). Prints the name of
// the model's output.
//   write_cli_model OUTDIR
#include <dlavm/dlavm.hpp>
#include <dlavm/onnx/export.hpp>
#include <dlavm/onnx/import.hpp>
#include <dlavm/te/npy.hpp>

#include <fmt/format.h>

#include <filesystem>

int main(int argc, char** argv) try {
  namespace graph = dlavm::graph;
  using dlavm::DType;
  using dlavm::te::NDArray;
  if (argc != 2) {
    fmt::print(stderr, "usage: {} OUTDIR\n", argv[0]);
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir);
  const auto batch = dlavm::ne::var("batch", 1, 4);
  auto x = graph::input("image", {batch, 3, 8, 8}, DType::float32());
  auto y = graph::relu(
      graph::conv2d(x, graph::constant("w1", NDArray::random_float({16, 3, 3, 3}, 1, -0.4, 0.4)),
                    {.padding = {1, 1, 1, 1}}));
  y = graph::max_pool2d(y, {.pool_size = {2, 2}, .strides = {2, 2}});
  y = graph::relu(
      graph::conv2d(y, graph::constant("w2", NDArray::random_float({16, 16, 3, 3}, 2, -0.2, 0.2)),
                    {.padding = {1, 1, 1, 1}}));
  y = graph::named(graph::flatten(graph::global_avg_pool2d(y)), "features");
  const auto fn = graph::function({x}, {y});
  std::vector<dlavm::quantization::Sample> samples;
  for (std::uint64_t k = 0; k < 4; ++k)
    samples.push_back(
        {{{"image", NDArray::random_float({1, 3, 8, 8}, 10 + k, -1, 1)}}, {{"batch", 1}}});
  const auto q = dlavm::quantize(fn, samples);
  dlavm::onnx::export_model(fn, dir / "float.onnx");
  std::filesystem::create_directories(dir / "calib");
  std::filesystem::create_directories(dir / "calib_bad");
  for (std::size_t k = 0; k < samples.size(); ++k)
    dlavm::te::write_npy(dir / "calib" / fmt::format("{}.npy", k), samples[k].inputs[0].second);
  dlavm::te::write_npy(dir / "calib_bad" / "0.npy", NDArray::random_float({1, 3, 5, 5}, 3, -1, 1));
  dlavm::onnx::export_model(q.function, dir / "model.onnx");
  const auto image = NDArray::random_float({2, 3, 8, 8}, 99, -1, 1);
  dlavm::te::write_npy(dir / "image.npy", image);
  dlavm::te::write_npy(dir / "image_int8.npy", NDArray::random(DType::int8(), {2, 3, 8, 8}, 1));
  dlavm::te::write_npy(dir / "image_small.npy", NDArray::random_float({2, 3, 4, 4}, 1, -1, 1));
  dlavm::te::write_npy(dir / "scalar.npy", NDArray::random_float({}, 1, -1, 1));  // of rank 0
  // the reference: the ONNX file imported and evaluated call by call on the host
  const auto back =
      dlavm::onnx::import((dir / "model.onnx").string(), {.dims = {{"batch", {1, 4}}}});
  const auto want = graph::evaluate(graph::infer_type(back, graph::Target{}), {{"image", image}},
                                    {{"batch", 2}})[0];
  dlavm::te::write_npy(dir / "want.npy", want);
  const auto* out = back.results()[0].as<graph::CallNode>();
  fmt::print("{}\n", out != nullptr ? out->result_name : "");
  return 0;
} catch (const dlavm::Error& e) {
  fmt::print(stderr, "write_cli_model: {}\n", e.what());
  return 1;
}

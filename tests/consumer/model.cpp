// The consumer's model program: a dense layer over a symbolic batch, emitted for firmware.
#include <dlavm/dlavm.hpp>

#include <cstdio>

int main(int argc, char** argv) try {
  namespace graph = dlavm::graph;
  if (argc < 2) return 2;
  auto batch = dlavm::ne::var("batch", 1, 16);
  auto x = graph::input("x", {batch, 32}, dlavm::DType::int8());
  auto w = graph::constant("w", dlavm::te::NDArray::random(dlavm::DType::int8(), {16, 32}, 1));
  auto y = graph::requantize(graph::dense(x, w), {.shift = 8});
  graph::Target target;
  auto mod =
      graph::build(graph::infer_type(graph::function({x}, {y}), target), target, {.name = "tiny"});
  dlavm::deploy::emit(mod, argv[1]);
  return 0;
} catch (const dlavm::Error& e) {
  std::fprintf(stderr, "consumer_model: %s\n", e.what());
  return 1;
}

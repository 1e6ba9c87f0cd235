// The firmware example's model program: builds ResNet-18, the symbolic-batch MLP and the LLM
// decoder layer with its KV cache, emits each for firmware (deploy::emit: <name>.hpp,
// <name>.weights.bin, <name>.insts.bin) and writes reference runs the firmware checks itself
// against: the inputs and the outputs of graph::Executor::run on the simulator
// (<name>.reference.bin: per run, the dim value, the input's bytes, the output's bytes).
// dlavm_add_model runs it at build time.
//   gen_models OUT_DIR [--image N] [--debug]
#include <dlavm/dlavm.hpp>

#include <fmt/os.h>

#include "../models.hpp"
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

namespace graph = dlavm::graph;
namespace te = dlavm::te;
namespace vta = dlavm::vta;

// Appends the little-endian bytes of an array in its dtype (float32: IEEE bytes).
void append(std::vector<std::uint8_t>& out, const te::NDArray& a) {
  if (a.dtype().is_float()) {
    const auto f = a.fdata();
    const auto* p = reinterpret_cast<const std::uint8_t*>(f.data());
    out.insert(out.end(), p, p + f.size() * sizeof(float));
  } else {
    const auto b = vta::dram_bytes(a);
    out.insert(out.end(), b.begin(), b.end());
  }
}
void append_u64(std::vector<std::uint8_t>& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

void write(const std::string& path, const std::vector<std::uint8_t>& bytes) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr || std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size()) {
    if (f != nullptr) std::fclose(f);
    throw dlavm::ValueError("gen_models: cannot write '" + path + "'");
  }
  std::fclose(f);
}

// Emits `mod` and runs it on the simulator for each dim value, in order (a state carried from
// run to run, as the firmware carries it): one record per run.
void emit_with_reference(graph::Module& mod, const std::string& dir, const std::string& input,
                         const std::vector<std::int64_t>& values, const std::string& dim,
                         const std::function<te::NDArray(std::int64_t)>& make_input,
                         const dlavm::deploy::EmitOptions& options) {
  const auto r = dlavm::deploy::emit(mod, dir, options);
  fmt::print("{}: {} ({} bytes), {} static streams ({} instructions), {} replayed steps\n",
             mod.name(), r.header, r.header_bytes, r.static_streams, r.static_instructions,
             r.replayed_steps);
  vta::SimDevice dev(mod.env().config);
  graph::Executor exec(mod, dev);
  std::vector<std::uint8_t> ref;
  for (const auto v : values) {
    const auto x = make_input(v);
    const graph::NamedArray in[] = {{input, x}};
    std::vector<dlavm::ne::Binding> bind;
    if (!dim.empty()) bind.push_back({dim, v});
    const auto out = exec.run(in, bind);
    std::vector<std::uint8_t> xb, yb;
    append(xb, x);
    append(yb, out[0]);
    append_u64(ref, static_cast<std::uint64_t>(v));
    append_u64(ref, xb.size());
    ref.insert(ref.end(), xb.begin(), xb.end());
    append_u64(ref, yb.size());
    ref.insert(ref.end(), yb.begin(), yb.end());
  }
  write(dir + "/" + mod.name() + ".reference.bin", ref);
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc < 2) {
    fmt::print(stderr, "usage: {} OUT_DIR [--image N] [--debug]\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  std::int64_t image = 224;
  bool debug = false;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--image" && i + 1 < argc) {
      image = std::atoll(argv[++i]);
    } else if (a == "--debug") {
      debug = true;
    } else {
      fmt::print(stderr, "gen_models: unknown option '{}'\n", a);
      return 2;
    }
  }
  const graph::Target target;
  {  // ResNet-18: every dim static, its VTA steps one straight-line stream (lite)
    auto mod = graph::build(models::ResNet18(image).function(), target, {.name = "resnet18"});
    emit_with_reference(mod, dir, "data", {1}, "",
                        [&](std::int64_t) {
                          return te::NDArray::random(dlavm::DType::int8(), {1, 3, image, image}, 1);
                        },
                        {.ns = "resnet18", .debug = debug, .lite = true});
  }
  {  // the MLP over a symbolic batch: its dense layers replayed for each batch
    auto mod = graph::build(models::Mlp().function(), target, {.name = "mlp"});
    emit_with_reference(mod, dir, "x", {1, 7, 64, 256}, "batch",
                        [](std::int64_t b) {
                          return te::NDArray::random(dlavm::DType::int8(), {b, 64},
                                                     100 + static_cast<std::uint64_t>(b));
                        },
                        {.ns = "mlp", .debug = debug});
  }
  {  // the gallery's LLM decoder layer (d_model 512, 8 heads, FFN 2048) with its KV cache of
     // 2048 positions, taking at most 16 tokens a run (the memory plan sizes every buffer for
     // the longest run: for 2048 queries the float scores alone would take 128 MB): a prefill
     // of 8 tokens, decode steps, a prefill of 9 that moves the cache's tiles past 16
     // positions, decode again, then a prompt in chunks of 16 up to 2047 positions and the
     // decode step that fills the cache
    const models::LlmLayer net(512, 8, 2048, 2048, 16);
    auto mod = graph::build(net.function(), target, {.name = "llm_layer"});
    std::vector<std::int64_t> tokens{8, 1, 1, 1, 1, 9, 1, 1};
    for (std::int64_t held = 23; held + 16 <= 2047; held += 16) tokens.push_back(16);
    tokens.push_back(2047 - 23 - (2047 - 23) / 16 * 16);
    tokens.push_back(1);
    emit_with_reference(mod, dir, "x", tokens, "token",
                        [](std::int64_t t) {
                          return te::NDArray::random(dlavm::DType::int8(), {1, t, 512},
                                                     300 + static_cast<std::uint64_t>(t));
                        },
                        {.ns = "llm_layer", .debug = debug});
  }
  return 0;
} catch (const std::exception& e) {
  fmt::print(stderr, "gen_models: {}\n", e.what());
  return 1;
}

// The programs tests/deploy checks the generated replays on, built the same way by the
// generator (gen/gen_replays.cpp, at build time) and by the test (at run time): symbolic
// programs from graph modules (the MLP's dense layers over a symbolic batch, convolutions and
// a pool over symbolic batch, height and width, attention's matmuls over a symbolic token count
// and cache length) and static ones (the tutorials' vector add and
// GEMM, which the test also replays in constant expressions).
#pragma once

#include <dlavm/dlavm.hpp>

#include "../../examples/gallery_ops.hpp"
#include "../../examples/models.hpp"
#include <memory>
#include <string>
#include <vector>

namespace deploy_cases {

namespace graph = dlavm::graph;
namespace ne = dlavm::ne;
namespace te = dlavm::te;
namespace vta = dlavm::vta;
using dlavm::DType;

struct Case {
  std::string name;
  std::shared_ptr<const vta::Program> program;
  std::vector<std::string> dims;                  // the replay's dims, in order
  std::vector<std::vector<std::int64_t>> values;  // dim values the test replays
};

// Every point of the grid lo[k]..hi[k] step[k].
inline std::vector<std::vector<std::int64_t>> grid(std::vector<std::int64_t> lo,
                                                   std::vector<std::int64_t> hi,
                                                   std::vector<std::int64_t> step) {
  std::vector<std::vector<std::int64_t>> out{{}};
  for (std::size_t k = 0; k < lo.size(); ++k) {
    std::vector<std::vector<std::int64_t>> next;
    for (const auto& p : out)
      for (std::int64_t v = lo[k]; v <= hi[k]; v += step[k]) {
        next.push_back(p);
        next.back().push_back(v);
      }
    out = std::move(next);
  }
  return out;
}

// The module's VTA steps (those whose program's name starts with `only`, where given).
inline void add_vta_steps(std::vector<Case>& cases, const graph::Module& mod,
                          const std::string& prefix, const std::vector<std::string>& dims,
                          const std::vector<std::vector<std::int64_t>>& values,
                          const std::string& only = "") {
  int k = 0;
  for (const auto& step : mod.steps())
    if (step.kind == graph::ModuleStep::Kind::Vta && step.program->name().starts_with(only))
      cases.push_back({prefix + std::to_string(k++), step.program, dims, values});
}

inline std::vector<Case> cases() {
  std::vector<Case> out;
  const graph::Target target;
  {
    const models::Mlp mlp;
    add_vta_steps(out, graph::build(mlp.function(), target, {.name = "mlp"}), "mlp", {"batch"},
                  grid({1}, {256}, {1}));
  }
  {  // a padded 3x3 convolution and a max pool over symbolic batch, height and width
    const auto n = ne::var("batch", 1, 3), h = ne::var("height", 3, 20),
               w = ne::var("width", 3, 20);
    auto x = graph::input("x", {n, 16, h, w}, DType::int8());
    auto wt = graph::constant("w", te::NDArray::random(DType::int8(), {32, 16, 3, 3}, 5, -8, 8));
    auto y = graph::requantize(graph::conv2d(x, wt, {.strides = {1, 1}, .padding = {1, 2, 0, 1}}),
                               {.shift = 6});
    y = graph::max_pool2d(y, {.pool_size = {2, 2}, .strides = {2, 2}});
    add_vta_steps(out, graph::build(graph::function({x}, {y}), target, {.name = "conv"}), "conv",
                  {"batch", "height", "width"}, grid({1, 3, 3}, {3, 20, 20}, {1, 1, 1}));
  }
  {  // a strided convolution, symbolic height only
    const auto h = ne::var("h", 7, 40);
    auto x = graph::input("x", {1, 32, h, 14}, DType::int8());
    auto wt = graph::constant("w", te::NDArray::random(DType::int8(), {16, 32, 3, 3}, 6, -8, 8));
    auto y = graph::relu(graph::requantize(
        graph::conv2d(x, wt, {.strides = {2, 2}, .padding = {1, 1, 1, 1}}), {.shift = 7}));
    add_vta_steps(out, graph::build(graph::function({x}, {y}), target, {.name = "strided"}),
                  "strided", {"h"}, grid({7}, {40}, {1}));
  }
  {  // attention's two matmuls (Q.K^T, probabilities.V) of examples/firmware's decoder layer
     // (eight 64-wide heads, a cache of 2,048 positions, runs of up to 16 tokens): loops over
     // the heads whose body enters kernels with the values of a loop over the keys inside it
    const models::LlmLayer llm(512, 8, 2048, 2048, 16);
    std::vector<std::vector<std::int64_t>> runs;
    for (const std::int64_t token : {1, 2, 5, 16})
      for (const std::int64_t last : {0, 1, 15, 16, 17, 100, 687, 688, 689, 1376, 2031, 2032, 2047})
        if (token + last <= 2048) runs.push_back({token, last});
    add_vta_steps(out, graph::build(llm.function(), target, {.name = "llm"}), "attention",
                  {"token", "last_token"}, runs, "matmul");
  }
  return out;
}

// The static programs: the tutorials' vector add and GEMM.
inline std::vector<Case> static_cases() {
  const vta::Env env;
  std::vector<Case> out;
  {
    const gallery::Vadd v(env, 8);
    auto s = v.schedule(env);
    out.push_back(
        {"vadd", std::make_shared<vta::Program>(vta::build(s, v.args(), env, "vadd")), {}, {{}}});
  }
  {
    const gallery::Gemm g(env, 1, 4, 4);
    auto s = g.schedule(env);
    out.push_back(
        {"gemm", std::make_shared<vta::Program>(vta::build(s, g.args(), env, "gemm")), {}, {{}}});
  }
  return out;
}

// The DRAM byte address of a program's parameter k in the tests: distinct, aligned for every
// memory.
constexpr std::uint64_t param_phys(std::size_t k) { return 0x100000 * (k + 1); }

}  // namespace deploy_cases

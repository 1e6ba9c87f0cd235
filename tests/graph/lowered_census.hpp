// What the lowering passes' tests read of a lowered function (micro-op kernels, loads,
// allocations, GEMM destinations), and a lowered function run on the simulator from random
// operands, for the tests of vta::load_acc_init, vta::gemm_into_acc and
// vta::reset_at_first_step.
#pragma once

#include <dlavm/graph.hpp>
#include <dlavm/vta/lower.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace lowered_census {

namespace te = dlavm::te;
namespace tir = dlavm::tir;
namespace vta = dlavm::vta;

// Micro-op kernels by name, loads by the buffer they fill, allocations by name, and the
// buffers GEMMs accumulate into.
struct Census {
  std::vector<std::string> kernels, loaded, allocated, gemm_into;
  long count(const std::vector<std::string>& v, const std::string& s) const {
    return std::count(v.begin(), v.end(), s);
  }
  bool allocates(const std::string& prefix) const {
    return std::any_of(allocated.begin(), allocated.end(),
                       [&](const std::string& b) { return b.starts_with(prefix); });
  }
};

inline Census census(const tir::Stmt& body) {
  struct Walk : tir::StmtVisitor<Walk> {
    Census c;
    void visit_attr(const tir::AttrNode& n, const tir::Stmt& s) {
      if (n.key == vta::intrin::uop_kernel) c.kernels.push_back(n.node);
      tir::StmtVisitor<Walk>::visit_attr(n, s);
    }
    void visit_allocate(const tir::AllocateNode& n, const tir::Stmt& s) {
      c.allocated.push_back(n.buffer.name());
      tir::StmtVisitor<Walk>::visit_allocate(n, s);
    }
    void visit_evaluate(const tir::EvaluateNode& n, const tir::Stmt&) {
      const auto* call = n.value.as<te::CallNode>();
      if (call == nullptr) return;
      if (call->name == vta::intrin::load) c.loaded.push_back(call->buffers[0].name());
      if (call->name == vta::intrin::gemm) c.gemm_into.push_back(call->buffers[0].name());
    }
  } w;
  w.visit(body);
  return w.c;
}

// The function after pass `pass`.
inline const tir::PrimFunc& after(const std::vector<vta::LoweringStep>& steps, const char* pass) {
  for (const auto& step : steps)
    if (step.pass == std::string(pass)) return step.func;
  FAIL("no pass ", pass);
  return steps.back().func;
}

// The function lowered up to pass `last`, then given its virtual threads: the passes between
// left out.
inline tir::PrimFunc lowered_until(const std::vector<vta::LoweringStep>& steps, const char* last) {
  tir::PrimFunc f = after(steps, last);
  f.body = vta::inject_vthread(f.body);
  return f;
}

// An operand's array for a run: nullopt takes the default (random full-range values, small
// weights).
using MakeArray = std::function<std::optional<te::NDArray>(
    const te::Tensor&, std::span<const std::int64_t> shape, std::uint64_t seed)>;

// The result a lowered function computes on the simulator from random operands at `bindings`.
inline te::NDArray run(const vta::Env& env, const std::vector<te::Tensor>& args,
                       const tir::PrimFunc& f, std::span<const dlavm::ne::Binding> bindings,
                       std::uint64_t seed, const MakeArray& make = {}) {
  const vta::Program prog(env, f);
  std::vector<te::NDArray> arrays;
  for (const auto& t : args) {
    std::vector<std::int64_t> shape;
    for (const auto& d : t.shape()) shape.push_back(dlavm::ne::eval(d, bindings));
    ++seed;
    if (make)
      if (auto a = make(t, shape, seed)) {
        arrays.push_back(std::move(*a));
        continue;
      }
    arrays.push_back(t.dtype() == env.wgt_dtype ? te::NDArray::random(t.dtype(), shape, seed, -4, 4)
                                                : te::NDArray::random(t.dtype(), shape, seed));
  }
  vta::SimDevice dev(env.config);
  std::vector<te::NDArray*> ptrs;
  for (auto& a : arrays) ptrs.push_back(&a);
  CHECK(prog.run(dev, ptrs, bindings).result.finished);
  return arrays.back();
}

// Hand-written lowered statements: an intrinsic call, and a micro-op kernel `what` of one
// micro-op over a loop of 4 (destination factor 1, source factor `src_factor`).
inline te::Expr iv(std::int64_t v) { return te::index_value(v); }
inline tir::Stmt intrinsic(std::string_view name, std::vector<te::Expr> args,
                           std::vector<te::Buffer> buffers = {}) {
  return tir::make_evaluate(
      te::call(std::string(name), dlavm::DType::int32(), std::move(args), std::move(buffers)));
}
inline tir::Stmt kernel4(const char* what, tir::Stmt uop, std::int64_t src_factor) {
  return tir::make_attr(
      std::string(vta::intrin::uop_kernel), what, 1,
      tir::make_seq({intrinsic(vta::intrin::uop_loop_begin, {iv(4), iv(1), iv(src_factor), iv(0)}),
                     uop, intrinsic(vta::intrin::uop_loop_end, {})}));
}

// The 3x3 convolution over 64 channels at 14 x 14 whose lowering the census tests read.
inline dlavm::graph::Conv2dShape conv3x3() {
  return {.batch = 1,
          .in_channels = 64,
          .height = 14,
          .width = 14,
          .out_channels = 64,
          .kernel = {3, 3},
          .padding = {1, 1, 1, 1}};
}

// A random convolution for VTA (its width unfolded where the strategy would), of sides up to
// `max_side`, its dims drawn by `pick(lo, hi)`.
template <class Pick>
dlavm::graph::Conv2dShape random_conv(const vta::Env& env, Pick& pick, std::int64_t max_side) {
  const std::int64_t kh = pick(1, 5), kw = pick(1, 5);
  return dlavm::graph::vta_conv2d_shape(
      env, {.batch = pick(1, 2),
            .in_channels = pick(1, 64),
            .height = pick(kh, max_side),
            .width = pick(kw, max_side),
            .out_channels = pick(1, 64),
            .kernel = {kh, kw},
            .strides = {pick(1, 2), pick(1, 2)},
            .padding = {pick(0, kh - 1), pick(0, kw - 1), pick(0, kh - 1), pick(0, kw - 1)}});
}

}  // namespace lowered_census

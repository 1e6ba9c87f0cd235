// DMA injection: padded input loads (te::pad), pads that change from block to block, transfers
// split over several instructions when one cannot express them, and the errors for what no
// transfer can express. Results are checked on the simulator against a direct NCHW
// convolution (through the layout helpers) or te::evaluate.
#include <dlavm/dlavm.hpp>

#include <doctest/doctest.h>

#include "../../examples/gallery_ops.hpp"
#include <optional>
#include <string>

namespace te = dlavm::te;
namespace ne = dlavm::ne;
namespace tir = dlavm::tir;
namespace vta = dlavm::vta;

namespace {

struct ConvCase {
  int h, w, in_c, out_c, k, pad, stride;
  int oc_block, h_block, w_block, vthreads;
};

// Builds, runs and checks one convolution; returns the run for further checks.
vta::ProgramRun run_conv(const ConvCase& c, std::optional<vta::Program>* keep = nullptr) {
  CAPTURE(c.h);
  CAPTURE(c.w);
  CAPTURE(c.pad);
  CAPTURE(c.stride);
  CAPTURE(c.h_block);
  vta::Env env;
  const gallery::Conv2d op(env, c.h, c.w, c.in_c, c.out_c, c.k, c.pad, c.stride);
  auto s = op.schedule(env, c.oc_block, c.h_block, c.w_block, 1, c.vthreads);
  auto prog = vta::build(s, op.args(), env, "conv");
  const auto nchw = te::NDArray::random(env.inp_dtype, {1, c.in_c, c.h, c.w}, 11);
  const auto oihw = te::NDArray::random(env.wgt_dtype, {c.out_c, c.in_c, c.k, c.k}, 12, -6, 6);
  auto data = vta::pack_activation(nchw, env);
  auto kernel = vta::pack_weight(oihw, env);
  te::NDArray res(env.inp_dtype, {1, c.out_c / 16, op.out_h, op.out_w, 1, 16});
  vta::SimDevice dev(env.config);
  auto run = prog.run(dev, {&data, &kernel, &res});
  CHECK(run.result.finished);
  CHECK(vta::unpack_activation(res, 1, c.out_c) ==
        gallery::conv2d_reference(nchw, oihw, c.pad, c.stride));
  if (keep) keep->emplace(std::move(prog));
  return run;
}

// The decoded INP loads of a program instantiated at fixed addresses (not the token-carrying
// no-ops, which have x_size 0).
std::vector<vta::InsnFields> input_loads(const vta::Program& prog) {
  const std::vector<std::uint64_t> phys{0x100000, 0x800000, 0x1000000};
  const auto stream = prog.instantiate({}, phys);
  std::vector<vta::InsnFields> out;
  for (std::size_t i = 0; i < stream.insns.size(); ++i) {
    const auto f = vta::decode(prog.env().config.layout(), stream.insns[i], i);
    if (f.opcode == vta::Opcode::Load && f.memory_type == vta::MemId::Inp && f.x_size > 0)
      out.push_back(f);
  }
  return out;
}

}  // namespace

TEST_CASE("dma: padded input loads, pads that differ per block") {
  // 3x3, pad 1, rows in blocks of 4 of 10 (the last block shorter), 2 virtual threads.
  std::optional<vta::Program> prog;
  run_conv({10, 9, 32, 32, 3, 1, 1, 1, 4, 9, 2}, &prog);
  const auto loads = input_loads(*prog);
  REQUIRE(loads.size() >= 3);
  // First row block: one row of top padding, a column of padding on each side, 5 data rows.
  CHECK(loads[0].y_pad_0 == 1);
  CHECK(loads[0].y_pad_1 == 0);
  CHECK(loads[0].x_pad_0 == 1);
  CHECK(loads[0].x_pad_1 == 1);
  CHECK(loads[0].y_size == 5);
  CHECK(loads[0].x_size == 9);
  CHECK(loads[0].x_stride == 9);
  // The last row block (rows 8, 9) covers input rows 7..10: one row of bottom padding.
  const auto& last = loads.back();
  CHECK(last.y_pad_0 == 0);
  CHECK(last.y_pad_1 == 1);
  CHECK(last.y_size == 3);
}

TEST_CASE("dma: convolutions of other shapes") {
  run_conv({7, 7, 16, 16, 1, 0, 1, 1, 7, 7, 1});  // 1x1, no padding
  run_conv({6, 5, 48, 32, 3, 2, 1, 2, 3, 5, 1});  // pad 2, odd width, 3 input tiles
  run_conv({9, 9, 16, 32, 3, 1, 2, 1, 2, 5, 2});  // stride 2, partial row block
  run_conv({5, 5, 16, 16, 5, 2, 1, 1, 5, 5, 1});  // 5x5 kernel, pad 2
}

TEST_CASE("dma: virtual threads overlap loads with GEMMs") {
  const auto one = run_conv({14, 14, 64, 64, 3, 1, 1, 2, 7, 14, 1});
  const auto two = run_conv({14, 14, 64, 64, 3, 1, 1, 2, 7, 14, 2});
  CHECK(two.result.counters.gemm_uops == one.result.counters.gemm_uops);
  CHECK(two.result.timing.total_cycles < one.result.timing.total_cycles);
  // With double buffering the compute module hardly waits for loads.
  const auto& c = two.result.timing.module(vta::Queue::Compute);
  CHECK(c.stall * 10 < two.result.timing.total_cycles);
}

namespace {
// A convolution over `data` padded by `before` / `after` (any dims): the padded tensor is an
// input buffer read by a tensorized GEMM, so that any padding the DMA cannot express is
// reported by the DMA pass.
struct Padded {
  vta::Env env;
  te::Tensor data, kernel, res;
  std::optional<te::Schedule> schedule;
};
Padded padded_conv(const std::vector<ne::Expr>& before, const std::vector<ne::Expr>& after,
                   std::int64_t value = 0, const std::string& scope = "", int hw = 4, int kk = 3) {
  Padded p;
  const auto& env = p.env;
  const auto data = te::placeholder(te::shape(1, 2, hw, hw, 1, 16), env.inp_dtype, "data");
  const auto padded = te::pad(data, before, after, value, "data_buf");
  const auto& ps = padded.shape();
  const auto ic_t = *ne::simplify(ps[1]).as_int();
  const auto kernel = te::placeholder(te::shape(1, ic_t, kk, kk, 16, 16), env.wgt_dtype, "kernel");
  const auto kernel_buf = te::compute(
      te::shape(1, ic_t, kk, kk, 16, 16), [&](auto... i) { return kernel(i...); }, "kernel_buf");
  auto ic = te::reduce_axis({0, ic_t}, "ic");
  auto dy = te::reduce_axis({0, kk}, "dy");
  auto dx = te::reduce_axis({0, kk}, "dx");
  auto k = te::reduce_axis({0, 16}, "k");
  const auto oh = *ne::simplify(ps[2] - kk + 1).as_int(),
             ow = *ne::simplify(ps[3] - kk + 1).as_int();
  auto conv = te::compute(
      te::shape(1, 1, oh, ow, 1, 16),
      [&](auto bo, auto co, auto i, auto j, auto bi, auto ci) {
        return te::sum(te::cast(env.acc_dtype, padded(bo, ic, i + dy, j + dx, bi, k)) *
                           te::cast(env.acc_dtype, kernel_buf(co, ic, dy, dx, ci, k)),
                       {ic, dy, dx, k});
      },
      "conv");
  auto res = te::compute(
      te::shape(1, 1, oh, ow, 1, 16),
      [&](auto... i) { return te::cast(env.inp_dtype, conv(i...)); }, "res");
  auto s = te::create_schedule(res);
  s[padded].set_scope(scope.empty() ? env.inp_scope : scope);
  s[kernel_buf].set_scope(env.wgt_scope);
  s[conv].set_scope(env.acc_scope);
  const auto c = s[conv].node()->root;
  s[conv].reorder({ic, c[0], c[1], c[2], dy, dx, c[3], c[4], c[5], k});
  s[padded].pragma(s[padded].axis(0), env.dma_copy);
  s[kernel_buf].pragma(s[kernel_buf].axis(0), env.dma_copy);
  s[res].pragma(s[res].axis(0), env.dma_copy);
  s[conv].tensorize(c[4], env.gemm);
  p.data = data;
  p.kernel = kernel;
  p.res = res;
  p.schedule.emplace(std::move(s));
  return p;
}
tir::PrimFunc lower_padded(const std::vector<ne::Expr>& before, const std::vector<ne::Expr>& after,
                           std::int64_t value = 0, const std::string& scope = "") {
  auto p = padded_conv(before, after, value, scope);
  return vta::lower(*p.schedule, {p.data, p.kernel, p.res}, p.env);
}
// Builds and runs a padded convolution, checked against te::evaluate.
void run_padded(const std::vector<ne::Expr>& before, const std::vector<ne::Expr>& after, int hw,
                int kk) {
  auto p = padded_conv(before, after, 0, "", hw, kk);
  auto prog = vta::build(*p.schedule, {p.data, p.kernel, p.res}, p.env);
  MESSAGE(tir::to_string(prog.func()));
  const auto& rs = p.res.shape();
  const auto dim = [](const ne::Expr& e) { return *ne::simplify(e).as_int(); };
  auto d = te::NDArray::random(p.env.inp_dtype, {1, 2, hw, hw, 1, 16}, 21);
  auto w = te::NDArray::random(p.env.wgt_dtype, {1, dim(p.kernel.shape()[1]), kk, kk, 16, 16}, 22);
  te::NDArray r(p.env.inp_dtype, {1, 1, dim(rs[2]), dim(rs[3]), 1, 16});
  vta::SimDevice dev(p.env.config);
  CHECK(prog.run(dev, {&d, &w, &r}).result.finished);
  CHECK(r == te::evaluate(p.res, {{p.data, d}, {p.kernel, w}}));
}
}  // namespace

TEST_CASE("dma: padding along the channel tiles") {
  // 1x1 spatial tiles: a padded channel tile is one entry of x padding.
  run_padded({0, 1, 0, 0, 0, 0}, {0, 1, 0, 0, 0, 0}, 1, 1);
  // Channels and rows and columns padded: the channel loop stays a host loop whose padded
  // iterations load boxes of padding rows.
  run_padded({0, 1, 1, 1, 0, 0}, {0, 0, 1, 1, 0, 0}, 4, 3);
  // 4x4 spatial tiles per channel tile: merged into x, a padded channel tile would be 16
  // entries of x padding, more than the 4-bit field holds; the channel loop stays a dim of its
  // own instead (y), padded by one row of 16 tiles.
  const auto f = lower_padded({0, 1, 0, 0, 0, 0}, {0, 0, 0, 0, 0, 0});
  CHECK(tir::to_string(f).find("@vta.load(data_buf, data; 2, 0, 0, 2, 16, 16, 1, 0, 0, 0)") !=
        std::string::npos);
  run_padded({0, 1, 0, 0, 0, 0}, {0, 0, 0, 0, 0, 0}, 4, 3);
  // Rows of padding beyond the field's 15, in any form, are an error.
  CHECK_THROWS_WITH_AS(lower_padded({0, 0, 16, 0, 0, 0}, {0, 0, 0, 0, 0, 0}),
                       doctest::Contains("a pad of 16 (at least 16) does not fit the LOAD's 4-bit "
                                         "pad fields (at most 15)"),
                       dlavm::EncodingError);
}

TEST_CASE("dma: what padding VTA cannot express is an error") {
  vta::Env env;
  // Zero padding only.
  CHECK_THROWS_WITH_AS(lower_padded({0, 0, 1, 1, 0, 0}, {0, 0, 1, 1, 0, 0}, 3),
                       doctest::Contains("VTA's input loads pad with zeros, not 3; a buffer in the "
                                         "accumulator (local.acc_buffer) is padded with any value"),
                       dlavm::ScheduleError);
  // Only input loads are padded (VTA's weight and accumulator loads have no padding).
  CHECK_THROWS_WITH_AS(lower_padded({0, 0, 1, 1, 0, 0}, {0, 0, 1, 1, 0, 0}, 0, env.wgt_scope),
                       doctest::Contains("VTA pads only input loads"), dlavm::ScheduleError);
  // Padding inside a tile.
  CHECK_THROWS_WITH_AS(lower_padded({0, 0, 0, 0, 0, 1}, {0, 0, 0, 0, 0, 1}),
                       doctest::Contains("VTA moves whole 16-element tiles"), dlavm::ScheduleError);
  // te::pad's own checks.
  const auto data = te::placeholder(te::shape(1, 2, 4, 4, 1, 16), env.inp_dtype, "data");
  CHECK_THROWS_WITH_AS(te::pad(data, {0, 0, 1}, {0, 0, 1}), doctest::Contains("has 6 dims"),
                       dlavm::ShapeError);
  CHECK_THROWS_WITH_AS(te::pad(data, {0, 0, -1, 0, 0, 0}, {0, 0, 0, 0, 0, 0}),
                       doctest::Contains("can be negative"), dlavm::ShapeError);
  CHECK_THROWS_WITH_AS(te::pad(data, {0, 0, 1, 0, 0, 0}, {0, 0, 0, 0, 0, 0}, 200),
                       doctest::Contains("pad value 200 does not fit int8"), dlavm::ValueError);
}

TEST_CASE("dma: blocks of padding only") {
  // Pad 3 around 4 rows with one output row per block: the first blocks read rows of padding
  // only, which an input LOAD writes with y_size = 0.
  run_conv({4, 4, 16, 16, 3, 3, 1, 1, 1, 8, 1});
  // A block of padding columns only has x_size = 0, which makes a LOAD a no-op: an error.
  vta::Env env;
  const gallery::Conv2d op(env, 4, 4, 16, 16, 3, 3, 1);
  auto s = op.schedule(env, 1, op.out_h, 1, 1, 1);
  const auto prog = vta::build(s, op.args(), env, "conv");
  const std::vector<std::uint64_t> phys{0x100000, 0x200000, 0x300000};
  CHECK_THROWS_WITH_AS(prog.instantiate({}, phys),
                       doctest::Contains("x_size of 'data' -> 'data_buf' is 0 for these values"),
                       dlavm::ValueError);
}

TEST_CASE("dma: a DRAM stride wider than its field becomes several transfers") {
  // Rows 65600 tiles apart: x_stride holds 16 bits, so each row is its own LOAD.
  vta::Env env;
  const std::int64_t wide = 65600;
  auto A = te::placeholder(te::shape(3, wide, 16), env.acc_dtype, "A");
  auto A_buf = te::compute(
      te::shape(3, 2, 16), [&](auto i, auto j, auto k) { return A(i, j, k); }, "A_buf");
  auto R = te::compute(
      te::shape(3, 2, 16),
      [&](auto i, auto j, auto k) { return te::cast(env.inp_dtype, A_buf(i, j, k)); }, "R");
  auto s = te::create_schedule(R);
  s[A_buf].set_scope(env.acc_scope);
  s[A_buf].pragma(s[A_buf].axis(0), env.dma_copy);
  s[R].pragma(s[R].axis(0), env.dma_copy);
  const auto f = vta::lower(s, {A, R}, env);
  const auto text = tir::to_string(f);
  MESSAGE(text);
  CHECK(text.find("for (i0, 0, 3)") != std::string::npos);  // a host loop around the load
  auto prog = vta::build(s, {A, R}, env);
  auto a = te::NDArray::random(env.acc_dtype, {3, wide, 16}, 5, -1000, 1000);
  te::NDArray r(env.inp_dtype, {3, 2, 16});
  vta::SimDevice dev(env.config);
  CHECK(prog.run(dev, {&a, &r}).result.finished);
  CHECK(r == te::evaluate(R, {{A, a}}));
}

TEST_CASE("DRAM bytes: little-endian elements of the dtype's width, read back as the dtype") {
  using dlavm::DType;
  const std::vector<std::int64_t> values{-128, -1, 0, 1, 127, 77};
  const auto i8 = te::NDArray::from_ints(DType::int8(), {2, 3}, values);
  const auto bytes = vta::dram_bytes(i8);
  CHECK(bytes == std::vector<std::uint8_t>{0x80, 0xFF, 0x00, 0x01, 0x7F, 0x4D});
  te::NDArray back(DType::int8(), {2, 3});
  vta::from_dram_bytes(bytes, back);
  CHECK(back == i8);
  // the same bytes as uint8 read without the sign
  te::NDArray u8(DType::uint8(), {2, 3});
  vta::from_dram_bytes(bytes, u8);
  CHECK(std::vector<std::int64_t>(u8.data().begin(), u8.data().end()) ==
        std::vector<std::int64_t>{128, 255, 0, 1, 127, 77});
  CHECK(vta::dram_bytes(u8) == bytes);
  // int32: four bytes each, lowest first
  const std::vector<std::int64_t> wide{-2, 0x01020304};
  const auto i32 = te::NDArray::from_ints(DType::int32(), {2}, wide);
  const auto b32 = vta::dram_bytes(i32);
  CHECK(b32 == std::vector<std::uint8_t>{0xFE, 0xFF, 0xFF, 0xFF, 0x04, 0x03, 0x02, 0x01});
  te::NDArray back32(DType::int32(), {2});
  vta::from_dram_bytes(b32, back32);
  CHECK(back32 == i32);
  // too few bytes for the array
  CHECK_THROWS_AS(vta::from_dram_bytes(std::span(bytes).first(5), back), dlavm::ValueError);
  // written into a caller's bytes: the same ones, the bytes after left as they were; too few
  std::vector<std::uint8_t> into(10, 0xAA);
  vta::dram_bytes(i32, into);
  CHECK(std::vector<std::uint8_t>(into.begin(), into.begin() + 8) == b32);
  CHECK((into[8] == 0xAA && into[9] == 0xAA));
  const auto msg = [&] {
    try {
      vta::dram_bytes(i32, std::span(into).first(7));
    } catch (const dlavm::ValueError& e) {
      return std::string(e.what());
    }
    return std::string();
  }();
  CHECK(msg.find("7 bytes for 2 elements of int32") != std::string::npos);
}

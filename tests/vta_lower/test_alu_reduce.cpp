// Reductions on VTA's ALU: max, min and sum pooling written as te reductions over a window
// (te::max(data_buf(c, i*s + dy, j*s + dx), {dy, dx}) under the alu pragma) become a chain of
// ALU instructions, one per window element, over the output tiles; padding in the accumulator
// (which no VTA load pads) is filled by the ALU before the interior loads; constant fills.
// Every program runs on the simulator and is checked against te::evaluate, and the
// instruction counts against what the lowering promises.
#include <dlavm/dlavm.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace te = dlavm::te;
namespace ne = dlavm::ne;
namespace tir = dlavm::tir;
namespace vta = dlavm::vta;

namespace alu_reduce_test {

enum class Comb { Max, Min, Sum };

// Pooling of NCHWnc data (2 channel tiles) with a k x k window at stride s. The data is int32
// (an ACC load) or int8 (an ACC_8BIT load, widened by a cast); with `pad`, the padded tensor
// (te::pad, value `pad_value`) is staged in the accumulator.
struct Pool {
  vta::Env env;
  te::Tensor data, data_buf, pool, res;
  std::vector<std::int64_t> in_shape, out_shape;
  te::IterVar dy, dx;

  Pool(ne::Expr h, ne::Expr w, int k, int s, Comb comb, bool int8 = false, int pad = 0,
       std::int64_t pad_value = 0, vta::Env e = vta::Env())
      : env(std::move(e)) {
    const auto ph = ne::simplify(h + 2 * pad), pw = ne::simplify(w + 2 * pad);
    const auto oh = ne::simplify(ne::floordiv(ph - k, s) + 1);
    const auto ow = ne::simplify(ne::floordiv(pw - k, s) + 1);
    data =
        te::placeholder(te::shape(1, 2, h, w, 1, 16), int8 ? env.inp_dtype : env.acc_dtype, "data");
    if (pad > 0)
      data_buf =
          te::pad(data, {0, 0, pad, pad, 0, 0}, {0, 0, pad, pad, 0, 0}, pad_value, "data_buf");
    else
      data_buf = te::compute(
          te::shape(1, 2, h, w, 1, 16),
          [&](auto... i) { return te::cast(env.acc_dtype, data(i...)); }, "data_buf");
    dy = te::reduce_axis({0, k}, "dy");
    dx = te::reduce_axis({0, k}, "dx");
    const auto out = te::shape(1, 2, oh, ow, 1, 16);
    pool = te::compute(
        out,
        [&](auto n, auto c, auto i, auto j, auto b, auto l) {
          const auto e = te::cast(env.acc_dtype, data_buf(n, c, i * s + dy, j * s + dx, b, l));
          return comb == Comb::Max   ? te::max(e, {dy, dx})
                 : comb == Comb::Min ? te::min(e, {dy, dx})
                                     : te::sum(e, {dy, dx});
        },
        "pool");
    res = te::compute(
        out, [&](auto... i) { return te::cast(env.out_dtype, pool(i...)); }, "res");
  }

  te::Schedule schedule() const {
    auto s = te::create_schedule(res);
    s[data_buf].set_scope(env.acc_scope);
    s[pool].set_scope(env.acc_scope);
    s[data_buf].pragma(s[data_buf].axis(0), env.dma_copy);
    s[pool].pragma(s[pool].axis(0), env.alu);
    s[res].pragma(s[res].axis(0), env.dma_copy);
    return s;
  }
};

// Runs `prog` on the simulator for `dims`, checks the result against te::evaluate and
// returns the run.
vta::ProgramRun run_checked(const Pool& p, const vta::Program& prog, std::int64_t h, std::int64_t w,
                            std::int64_t oh, std::int64_t ow,
                            std::initializer_list<ne::Binding> dims = {}) {
  auto a = te::NDArray::random(p.data.dtype(), {1, 2, h, w, 1, 16},
                               static_cast<std::uint64_t>(h * w), -100, 100);
  te::NDArray r(p.env.out_dtype, {1, 2, oh, ow, 1, 16});
  vta::SimDevice dev(p.env.config);
  auto run = prog.run(dev, {&a, &r}, dims);
  CHECK(run.result.finished);
  CHECK(r == te::evaluate(p.res, {{p.data, a}}, dims));
  return run;
}

// Instructions of a program's stream (fixed dims), decoded.
std::vector<vta::InsnFields> decoded(const vta::Program& prog,
                                     std::initializer_list<ne::Binding> dims = {}) {
  const std::vector<std::uint64_t> phys{0x100000, 0x800000};
  const auto stream = prog.instantiate(dims, phys);
  std::vector<vta::InsnFields> out;
  for (std::size_t i = 0; i < stream.insns.size(); ++i)
    out.push_back(vta::decode(prog.env().config.layout(), stream.insns[i], i));
  return out;
}

struct Counts {
  int alu = 0, alu_imm = 0, resets = 0, acc_loads = 0, acc8_loads = 0;
};
Counts count(const std::vector<vta::InsnFields>& insns) {
  Counts c;
  for (const auto& f : insns) {
    if (f.opcode == vta::Opcode::Alu) (f.use_imm ? c.alu_imm : c.alu) += 1;
    if (f.opcode == vta::Opcode::Gemm && f.reset_reg) ++c.resets;
    if (f.opcode == vta::Opcode::Load && f.x_size > 0 && f.memory_type == vta::MemId::Acc)
      ++c.acc_loads;
    if (f.opcode == vta::Opcode::Load && f.x_size > 0 && f.memory_type == vta::MemId::Acc8)
      ++c.acc8_loads;
  }
  return c;
}

}  // namespace alu_reduce_test

using namespace alu_reduce_test;

TEST_CASE("alu: max, min and sum pooling run as one ALU instruction per window element") {
  struct Case {
    int h, w, k, s;
    Comb comb;
  };
  for (const auto& c :
       {Case{8, 8, 2, 2, Comb::Max}, Case{8, 8, 2, 2, Comb::Min}, Case{8, 8, 2, 2, Comb::Sum},
        Case{9, 9, 3, 2, Comb::Max}, Case{7, 6, 3, 1, Comb::Sum}, Case{6, 10, 3, 3, Comb::Min},
        Case{5, 5, 1, 2, Comb::Max}, Case{8, 6, 2, 1, Comb::Max}}) {
    CAPTURE(c.h);
    CAPTURE(c.w);
    CAPTURE(c.k);
    CAPTURE(c.s);
    CAPTURE(static_cast<int>(c.comb));
    const Pool p(c.h, c.w, c.k, c.s, c.comb);
    auto s = p.schedule();
    const auto prog = vta::build(s, {p.data, p.res}, p.env);
    const int oh = (c.h - c.k) / c.s + 1, ow = (c.w - c.k) / c.s + 1;
    const auto run = run_checked(p, prog, c.h, c.w, oh, ow);
    // A reset (a GEMM instruction), then k * k ALU instructions over the 2 * oh * ow output
    // tiles: an ADD of the first element and a MAX/MIN per other one, or an ADD per element.
    const auto n = count(decoded(prog));
    CHECK(n.resets == 1);
    CHECK(n.alu == c.k * c.k);
    CHECK(n.alu_imm == 0);
    CHECK(run.result.counters.alu_uops == static_cast<std::uint64_t>(c.k * c.k * 2 * oh * ow));
  }
}

TEST_CASE("alu: pooling over a symbolic number of rows, built once") {
  const auto h = ne::var("h", 1, 8);
  const Pool p(h * 2, 6, 2, 2, Comb::Max, /*int8=*/true);
  auto s = p.schedule();
  const auto prog = vta::build(s, {p.data, p.res}, p.env);
  for (std::int64_t v : {1, 3, 8}) {
    CAPTURE(v);
    const auto run = run_checked(p, prog, 2 * v, 6, v, 3, {{"h", v}});
    CHECK(run.result.counters.alu_uops == static_cast<std::uint64_t>(4 * 2 * v * 3));
    CHECK(count(decoded(prog, {{"h", v}})).acc8_loads == 1);  // int8 straight into int32
  }
}

TEST_CASE("alu: a reduction whose window loops are outermost, the pragma on the first") {
  // te::lower puts the init outside the first reduction loop, in front of the pragma.
  const Pool p(4, 4, 2, 2, Comb::Max);
  auto s = te::create_schedule(p.res);
  s[p.data_buf].set_scope(p.env.acc_scope);
  s[p.pool].set_scope(p.env.acc_scope);
  const auto ax = s[p.pool].node()->root;
  s[p.pool].reorder({p.dy, p.dx, ax[0], ax[1], ax[2], ax[3], ax[4], ax[5]});
  s[p.data_buf].pragma(s[p.data_buf].axis(0), p.env.dma_copy);
  s[p.pool].pragma(p.dy, p.env.alu);
  s[p.res].pragma(s[p.res].axis(0), p.env.dma_copy);
  const auto prog = vta::build(s, {p.data, p.res}, p.env);
  run_checked(p, prog, 4, 4, 2, 2);
  CHECK(count(decoded(prog)).alu == 4);
}

TEST_CASE("alu: a reduction with the stages it reads computed inside its loop") {
  // The window loops outermost, the data's rows for one window element copied at dx, the pragma
  // on the first data axis, inside them: te::lower's init nest keeps that pragma (TVM's does),
  // so the init is an ALU fill too (the max's identity -2^31: a reset, an ADD of -32768 and a
  // shift left by 16), and each window element's update one ALU MAX over the output tiles. (The
  // integer softmax's running max and sum over chunks are this form.)
  for (const auto comb : {Comb::Max, Comb::Sum}) {
    CAPTURE(static_cast<int>(comb));
    const Pool p(6, 6, 2, 2, comb);
    auto s = te::create_schedule(p.res);
    s[p.data_buf].set_scope(p.env.acc_scope);
    s[p.pool].set_scope(p.env.acc_scope);
    const auto ax = s[p.pool].node()->root;
    s[p.pool].reorder({p.dy, p.dx, ax[0], ax[1], ax[2], ax[3], ax[4], ax[5]});
    s[p.data_buf].compute_at(s[p.pool], p.dx);
    s[p.data_buf].pragma(s[p.data_buf].axis(0), p.env.dma_copy);
    s[p.pool].pragma(ax[0], p.env.alu);
    s[p.res].pragma(s[p.res].axis(0), p.env.dma_copy);
    const auto prog = vta::build(s, {p.data, p.res}, p.env);
    run_checked(p, prog, 6, 6, 3, 3);
    const auto n = count(decoded(prog));
    CHECK(n.resets == 1);
    CHECK(n.alu_imm == (comb == Comb::Max ? 2 : 0));
    CHECK(n.alu == 4);
    CHECK(n.acc_loads == 4 * 2);  // a window element's rows of each channel tile
  }
}

TEST_CASE("alu: max pooling of int8 data padded with -128 in the accumulator") {
  // 3x3, stride 2, pad 1 (a ResNet stem's pooling shape): the padded tensor is loaded through
  // ACC_8BIT (int8 sign-extended into the accumulator) and its border filled with -128, the
  // int8 minimum, which makes the max over a padded window exact.
  const Pool p(9, 9, 3, 2, Comb::Max, /*int8=*/true, /*pad=*/1, /*pad_value=*/-128);
  auto s = p.schedule();
  const auto prog = vta::build(s, {p.data, p.res}, p.env);
  MESSAGE(tir::to_string(prog.func()));
  run_checked(p, prog, 9, 9, 5, 5);
  const auto insns = decoded(prog);
  const auto n = count(insns);
  // The interior: one ACC_8BIT load per row (the padded rows are wider than the loaded ones),
  // no pad fields (VTA pads only input loads).
  CHECK(n.acc8_loads == 2 * 9);
  CHECK(n.acc_loads == 0);
  for (const auto& f : insns)
    if (f.opcode == vta::Opcode::Load && f.memory_type == vta::MemId::Acc8) {
      CHECK(f.x_size == 9);
      CHECK(f.y_pad_0 + f.y_pad_1 + f.x_pad_0 + f.x_pad_1 == 0);
    }
  // The border, four boxes (top and bottom rows, left and right columns) of a reset and an
  // ADD of -128 each; then the pooling's reset and nine ALU instructions.
  CHECK(n.alu_imm == 4);
  CHECK(n.resets == 4 + 1);
  CHECK(n.alu == 9);
}

TEST_CASE("alu: average pooling: a sum over a zero-padded window, then a shift") {
  const Pool p(6, 6, 3, 1, Comb::Sum, /*int8=*/true, /*pad=*/1, /*pad_value=*/0);
  auto avg = te::compute(
      te::shape(1, 2, 6, 6, 1, 16), [&](auto... i) { return p.pool(i...) >> 3; }, "avg");
  auto res = te::compute(
      te::shape(1, 2, 6, 6, 1, 16), [&](auto... i) { return te::cast(p.env.inp_dtype, avg(i...)); },
      "avg_res");
  auto s = te::create_schedule(res);
  for (const auto& t : {p.data_buf, p.pool, avg}) s[t].set_scope(p.env.acc_scope);
  s[p.data_buf].pragma(s[p.data_buf].axis(0), p.env.dma_copy);
  s[p.pool].pragma(s[p.pool].axis(0), p.env.alu);
  s[avg].pragma(s[avg].axis(0), p.env.alu);
  s[res].pragma(s[res].axis(0), p.env.dma_copy);
  const auto prog = vta::build(s, {p.data, res}, p.env);
  auto a = te::NDArray::random(p.env.inp_dtype, {1, 2, 6, 6, 1, 16}, 3);
  te::NDArray r(p.env.inp_dtype, {1, 2, 6, 6, 1, 16});
  vta::SimDevice dev(p.env.config);
  CHECK(prog.run(dev, {&a, &r}).result.finished);
  CHECK(r == te::evaluate(res, {{p.data, a}}));
  const auto n = count(decoded(prog));
  CHECK(n.alu_imm == 1);  // the shift: a pad of 0 is a reset alone
  CHECK(n.alu == 9);
}

TEST_CASE("alu: int32 max pooling padded with the int32 minimum") {
  // -2^31 does not fit the 16-bit immediate: the fill is ADD -32768, then a shift left by 16.
  const std::int64_t lowest = -2147483648LL;
  const Pool p(5, 5, 3, 2, Comb::Max, /*int8=*/false, /*pad=*/1, lowest);
  auto s = p.schedule();
  const auto prog = vta::build(s, {p.data, p.res}, p.env);
  run_checked(p, prog, 5, 5, 3, 3);
}

namespace alu_reduce_test {
// A stage of three tile rows filled with value(row, lane) under the alu pragma, stored as int32
// (a configuration with 32-bit outputs), so that every bit of the fill shows: its instructions'
// counts, and whether the result is te::evaluate's.
std::pair<Counts, bool> fill_rows(
    const std::function<te::Expr(const ne::Var&, const ne::Var&, const vta::Env&)>& value) {
  vta::Config config;
  config.log_out_width = 5;
  vta::Env env(config);
  const auto shape = te::shape(1, 3, env.batch, env.block_out);
  auto F = te::compute(
      shape, [&](auto, auto row, auto, auto lane) { return value(row, lane, env); }, "F");
  auto R = te::compute(
      shape, [&](auto... i) { return F(i...); }, "R");
  auto s = te::create_schedule(R);
  s[F].set_scope(env.acc_scope);
  s[F].pragma(s[F].axis(0), env.alu);
  s[R].pragma(s[R].axis(0), env.dma_copy);
  const auto prog = vta::build(s, {R}, env);
  te::NDArray r(env.acc_dtype, {1, 3, 1, 16});
  vta::SimDevice dev(env.config);
  CHECK(prog.run(dev, {&r}).result.finished);
  const std::vector<std::uint64_t> phys{0x100000};
  const auto stream = prog.instantiate({}, phys);
  std::vector<vta::InsnFields> insns;
  for (std::size_t i = 0; i < stream.insns.size(); ++i)
    insns.push_back(vta::decode(env.config.layout(), stream.insns[i], i));
  return {count(insns), r == te::evaluate(R, {})};
}
// The stage filled with one constant.
std::pair<Counts, bool> fill(std::int64_t value) {
  return fill_rows([&](const ne::Var&, const ne::Var&, const vta::Env& env) {
    return te::make_const(value, env.acc_dtype);
  });
}
}  // namespace alu_reduce_test

TEST_CASE("alu: constant fills: a reset, then immediates") {
  struct Case {
    std::int64_t value;
    int alu_imm;
  };
  for (const auto& c : {Case{0, 0}, Case{-128, 1}, Case{32767, 1}, Case{-32768, 1}, Case{40000, 3},
                        Case{65536, 2}, Case{-2147483648LL, 2}, Case{2147483647, 5}}) {
    CAPTURE(c.value);
    const auto [n, ok] = fill(c.value);
    CHECK(ok);
    CHECK(n.resets == 1);
    CHECK(n.alu_imm == c.alu_imm);
  }
}

TEST_CASE("alu: rows of constants that differ by row: one reset, then each row's immediates") {
  // -7 (one ADD), 100,000 = 2 x 2^16 - 31,072 (three), -2^31 (two)
  const auto [n, ok] = fill_rows([](const ne::Var& row, const ne::Var&, const vta::Env& env) {
    const auto c = [&](std::int64_t v) { return te::make_const(v, env.acc_dtype); };
    return te::select(row == 0, c(-7), te::select(row == 1, c(100000), c(-2147483648LL)));
  });
  CHECK(ok);
  CHECK(n.resets == 1);
  CHECK(n.alu_imm == 1 + 3 + 2);
  // a value that differs between the lanes of a tile: no immediate fills that
  CHECK_THROWS_WITH_AS(fill_rows([](const ne::Var&, const ne::Var& lane, const vta::Env& env) {
                         return te::select(lane == 0, te::make_const(1, env.acc_dtype),
                                           te::make_const(2, env.acc_dtype));
                       }),
                       doctest::Contains("differs within a 16-element tile"), dlavm::ScheduleError);
}

TEST_CASE("alu: the MIN of each row with its mirror image is one instruction of two micro-ops") {
  // M[k] = min(X[k], X[1 - k]) over two rows, in X's storage (tir::reuse_inplace): the second
  // micro-op reads the first row's old value or its new one, the same minimum.
  vta::Config config;
  config.log_out_width = 5;
  const vta::Env env(config);
  const auto shape = te::shape(1, 2, env.batch, env.block_out);
  for (const bool max : {false, true}) {
    CAPTURE(max);
    const auto data = te::placeholder(shape, env.acc_dtype, "data");
    const auto X = te::compute(
        shape, [&](auto... i) { return data(i...); }, "X");
    const auto M = te::compute(
        shape,
        [&](auto n, auto k, auto b, auto l) {
          const auto here = X(n, k, b, l), image = X(n, ne::Expr(1) - k, b, l);
          return max ? te::max(here, image) : te::min(here, image);
        },
        "M");
    const auto R = te::compute(
        shape, [&](auto... i) { return M(i...); }, "R");
    auto s = te::create_schedule(R);
    s[X].set_scope(env.acc_scope);
    s[X].pragma(s[X].axis(0), env.dma_copy);
    s[M].set_scope(env.acc_scope);
    s[M].pragma(s[M].axis(0), env.alu);
    s[R].pragma(s[R].axis(0), env.dma_copy);
    const auto prog = vta::build(s, {data, R}, env);
    auto a = te::NDArray::random(env.acc_dtype, {1, 2, 1, 16}, 7, -1000, 1000);
    te::NDArray r(env.acc_dtype, {1, 2, 1, 16});
    vta::SimDevice dev(env.config);
    const auto run = prog.run(dev, {&a, &r});
    CHECK(run.result.finished);
    CHECK(r == te::evaluate(R, {{data, a}}));
    CHECK(run.result.counters.alu_uops == 2);
    const std::vector<std::uint64_t> phys{0x100000, 0x800000};
    const auto stream = prog.instantiate({}, phys);
    int alu = 0;
    for (std::size_t i = 0; i < stream.insns.size(); ++i)
      alu += vta::decode(env.config.layout(), stream.insns[i], i).opcode == vta::Opcode::Alu;
    CHECK(alu == 1);
  }
}

TEST_CASE("alu: a small padded buffer is filled whole, a large one along its border") {
  // 1x1 pixels padded to 3x3: the four border boxes would cost more instructions than one
  // fill of the nine tiles.
  {
    const Pool p(1, 1, 3, 1, Comb::Max, true, 1, -128);
    auto s = p.schedule();
    const auto prog = vta::build(s, {p.data, p.res}, p.env);
    run_checked(p, prog, 1, 1, 1, 1);
    const auto n = count(decoded(prog));
    CHECK(n.alu_imm == 1);
    CHECK(n.resets == 1 + 1);
  }
  {
    const Pool p(16, 16, 3, 2, Comb::Max, true, 1, -128);
    auto s = p.schedule();
    const auto prog = vta::build(s, {p.data, p.res}, p.env);
    const auto run = run_checked(p, prog, 16, 16, 8, 8);
    // Border: 2 x (18 + 18 + 16 + 16) tiles, one reset and one ADD each; pooling 9 x 128.
    CHECK(run.result.counters.alu_uops == 2 * (18 + 18 + 16 + 16) + 9 * 128);
  }
}

TEST_CASE("alu: blocked max pooling, pads that differ per block, virtual threads") {
  // The schedule a graph layer gives a feature map too large for the accumulator: output rows
  // in blocks, channel tiles over two virtual threads, the padded input of each block loaded
  // (and its border filled: only the first block has a top row of padding) inside the block.
  for (const int block : {2, 3, 4}) {
    for (const bool threads : {false, true}) {
      CAPTURE(block);
      CAPTURE(threads);
      vta::Env env;
      auto data = te::placeholder(te::shape(1, 4, 16, 16, 1, 16), env.inp_dtype, "data");
      auto data_buf = te::pad(data, {0, 0, 1, 1, 0, 0}, {0, 0, 1, 1, 0, 0}, -128, "data_buf");
      auto dy = te::reduce_axis({0, 3}, "dy");
      auto dx = te::reduce_axis({0, 3}, "dx");
      const auto out = te::shape(1, 4, 8, 8, 1, 16);
      auto pool = te::compute(
          out,
          [&](auto n, auto c, auto i, auto j, auto b, auto l) {
            return te::max(te::cast(env.acc_dtype, data_buf(n, c, i * 2 + dy, j * 2 + dx, b, l)),
                           {dy, dx});
          },
          "pool");
      auto res = te::compute(
          out, [&](auto... i) { return te::cast(env.inp_dtype, pool(i...)); }, "res");
      auto s = te::create_schedule(res);
      s[data_buf].set_scope(env.acc_scope);
      s[pool].set_scope(env.acc_scope);
      auto [yo, yi] = s[res].split(s[res].axis(2), block);
      auto [co, ci] = s[res].split(s[res].axis(1), 2);
      s[res].reorder({co, yo, ci, yi});
      if (threads) {
        auto [coo, tx] = s[res].split(co, 2);
        s[res].reorder({tx, coo});
        s[res].bind(tx, te::thread_axis("cthread"));
      }
      s[pool].compute_at(s[res], yo);
      s[data_buf].compute_at(s[res], yo);
      s[data_buf].pragma(s[data_buf].axis(0), env.dma_copy);
      s[pool].pragma(s[pool].axis(0), env.alu);
      s[res].pragma(ci, env.dma_copy);
      const auto prog = vta::build(s, {data, res}, env);
      auto a = te::NDArray::random(env.inp_dtype, {1, 4, 16, 16, 1, 16}, 13);
      te::NDArray r(env.inp_dtype, {1, 4, 8, 8, 1, 16});
      vta::SimDevice dev(env.config);
      CHECK(prog.run(dev, {&a, &r}).result.finished);
      CHECK(r == te::evaluate(res, {{data, a}}));
    }
  }
}

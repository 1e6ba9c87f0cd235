// What a user gets for schedules VTA cannot run: a precise dlavm::Error, never a wrong program.
#include <dlavm/dlavm.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace te = dlavm::te;
namespace vta = dlavm::vta;
namespace ne = dlavm::ne;
namespace tir = dlavm::tir;

namespace {
struct Elementwise {
  vta::Env env;
  te::Tensor A, A_buf, R_buf, R;
  explicit Elementwise(const std::function<te::Expr(te::Expr)>& op, int rows = 8) {
    const auto shape = te::shape(1, rows, env.batch, env.block_out);
    A = te::placeholder(shape, env.acc_dtype, "A");
    A_buf = te::compute(
        shape, [&](auto... i) { return A(i...); }, "A_buf");
    R_buf = te::compute(
        shape, [&](auto... i) { return op(A_buf(i...)); }, "R_buf");
    R = te::compute(
        shape, [&](auto... i) { return te::cast(env.inp_dtype, R_buf(i...)); }, "R");
  }
  te::Schedule schedule(bool alu_pragma = true, bool dma_pragma = true) {
    auto s = te::create_schedule(R);
    s[A_buf].set_scope(env.acc_scope);
    s[R_buf].set_scope(env.acc_scope);
    if (dma_pragma) s[A_buf].pragma(s[A_buf].axis(0), env.dma_copy);
    s[R].pragma(s[R].axis(0), env.dma_copy);
    if (alu_pragma) s[R_buf].pragma(s[R_buf].axis(0), env.alu);
    return s;
  }
};
}  // namespace

TEST_CASE("vta errors: ALU operations VTA lacks and immediates too wide") {
  {
    // Subtraction of a tensor operand: VTA's ALU subtracts only immediates (as an ADD).
    Elementwise e([](te::Expr x) { return x - x; });
    auto s = e.schedule();
    CHECK_THROWS_WITH_AS(vta::build(s, {e.A, e.R}, e.env),
                         doctest::Contains("not an operation VTA's ALU has"), dlavm::ScheduleError);
  }
  {
    // A shift left by a tile: VTA shifts by a tile only right (a negative amount shifts left).
    Elementwise e([](te::Expr x) { return x << x; });
    auto s = e.schedule();
    CHECK_THROWS_WITH_AS(vta::build(s, {e.A, e.R}, e.env),
                         doctest::Contains("`(A_buf[(i1*16) + i3] << A_buf[(i1*16) + i3])` is not "
                                           "an operation VTA's ALU has"),
                         dlavm::ScheduleError);
  }
  {
    // The multiplier takes an 8-bit argument (VTA_MUL_ARG_BIT_WIDTH): caught when building.
    Elementwise e([](te::Expr x) { return x * 40000; });
    auto s = e.schedule();
    CHECK_THROWS_WITH_AS(vta::build(s, {e.A, e.R}, e.env),
                         doctest::Contains("immediate 40000 of `(A_buf[(i1*16) + i3]*40000)` does "
                                           "not fit the hardware's MUL argument [-128, 127]"),
                         dlavm::EncodingError);
  }
}

TEST_CASE("vta errors: stages the passes cannot map") {
  {
    Elementwise e([](te::Expr x) { return x + 1; });
    auto s = e.schedule(/*alu_pragma=*/false);
    CHECK_THROWS_WITH_AS(vta::build(s, {e.A, e.R}, e.env),
                         doctest::Contains("stage 'R_buf' is not mapped to VTA"),
                         dlavm::ScheduleError);
  }
  {
    // A scope without a DMA pragma to fill it.
    Elementwise e([](te::Expr x) { return x + 1; });
    auto s = e.schedule(true, /*dma_pragma=*/false);
    CHECK_THROWS_WITH_AS(vta::build(s, {e.A, e.R}, e.env),
                         doctest::Contains("stage 'A_buf' fills local.acc_buffer from DRAM tensor "
                                           "'A' without the dma_copy pragma"),
                         dlavm::ScheduleError);
  }
  {
    // A buffer that does not fit: 4096 accumulator tiles, 2048 entries of SRAM.
    Elementwise e([](te::Expr x) { return x + 1; }, 4096);
    auto s = e.schedule();
    CHECK_THROWS_WITH_AS(vta::build(s, {e.A, e.R}, e.env),
                         doctest::Contains("buffer 'A_buf' needs 262144 bytes of local.acc_buffer"),
                         dlavm::CapacityError);
  }
  {
    // A DMA whose innermost run is not a whole tile.
    vta::Env env;
    auto A = te::placeholder(te::shape(4, 6), env.acc_dtype, "A");
    auto A_buf = te::compute(
        te::shape(4, 6), [&](auto i, auto j) { return A(i, j); }, "A_buf");
    auto R = te::compute(
        te::shape(4, 6), [&](auto i, auto j) { return te::cast(env.inp_dtype, A_buf(i, j)); }, "R");
    auto s = te::create_schedule(R);
    s[A_buf].set_scope(env.acc_scope);
    s[A_buf].pragma(s[A_buf].axis(0), env.dma_copy);
    s[R].pragma(s[R].axis(0), env.dma_copy);
    CHECK_THROWS_WITH_AS(vta::build(s, {A, R}, env),
                         doctest::Contains("VTA moves whole 16-element tiles"),
                         dlavm::ScheduleError);
  }
  {
    // Tensorize on a nest that does not match the GEMM intrinsic: a max-reduction.
    vta::Env env;
    auto A = te::placeholder(te::shape(1, 2, 1, 16), env.inp_dtype, "A");
    auto B = te::placeholder(te::shape(2, 2, 16, 16), env.wgt_dtype, "B");
    auto ko = te::reduce_axis({0, 2}, "ko");
    auto ki = te::reduce_axis({0, 16}, "ki");
    auto C = te::compute(
        te::shape(1, 2, 1, 16),
        [&](auto bo, auto co, auto bi, auto ci) {
          return te::max(te::cast(env.acc_dtype, A(bo, ko, bi, ki)) *
                             te::cast(env.acc_dtype, B(co, ko, ci, ki)),
                         {ko, ki});
        },
        "C");
    auto s = te::create_schedule(C);
    s[C].reorder({ko, s[C].axis(0), s[C].axis(1), s[C].axis(2), s[C].axis(3), ki});
    s[C].tensorize(s[C].axis(2), env.gemm);
    CHECK_THROWS_WITH_AS(te::lower(s, {A, B, C}), doctest::Contains("does not match the intrinsic"),
                         dlavm::ScheduleError);
  }
}

TEST_CASE("vta: a tensor multiply runs on the ALU") {
  Elementwise e([](te::Expr x) { return x * x; });
  auto s = e.schedule();
  auto prog = vta::build(s, {e.A, e.R}, e.env);
  vta::SimDevice dev(e.env.config);
  auto a = te::NDArray::random(e.env.acc_dtype, {1, 8, 1, 16}, 4, -300, 300);
  te::NDArray r(e.env.inp_dtype, {1, 8, 1, 16});
  CHECK(prog.run(dev, {&a, &r}).result.finished);
  CHECK(r == te::evaluate(e.R, {{e.A, a}}));
}

TEST_CASE("vta: subtract and shift-left immediates map onto ADD and SHR") {
  Elementwise e([](te::Expr x) { return x; });
  vta::Env& env = e.env;
  const auto shape = te::shape(1, 8, env.batch, env.block_out);
  auto S = te::compute(
      shape, [&](auto... i) { return e.A_buf(i...) - 3; }, "S");
  auto L = te::compute(
      shape, [&](auto... i) { return S(i...) << 2; }, "L");
  auto R = te::compute(
      shape, [&](auto... i) { return te::cast(env.inp_dtype, L(i...)); }, "R2");
  auto s = te::create_schedule(R);
  for (const auto& t : {e.A_buf, S, L}) s[t].set_scope(env.acc_scope);
  s[e.A_buf].pragma(s[e.A_buf].axis(0), env.dma_copy);
  s[S].pragma(s[S].axis(0), env.alu);
  s[L].pragma(s[L].axis(0), env.alu);
  s[R].pragma(s[R].axis(0), env.dma_copy);
  auto prog = vta::build(s, {e.A, R}, env);
  vta::SimDevice dev(env.config);
  auto a = te::NDArray::random(env.acc_dtype, {1, 8, 1, 16}, 9, -1000, 1000);
  te::NDArray r(env.inp_dtype, {1, 8, 1, 16});
  CHECK(prog.run(dev, {&a, &r}).result.finished);
  CHECK(r == te::evaluate(R, {{e.A, a}}));
}

namespace {
// A fully connected layer with a bias: C = cast(int8, A x B^T + bias), the bias added on the
// ALU; `scopes`/`tensorize` leave out parts of the schedule.
struct FcBias {
  vta::Env env;
  te::Tensor A, B, bias, A_buf, B_buf, bias_buf, C_buf, C_bias, C;
  te::IterVar ko, ki;
  FcBias() {
    const auto a_shape = te::shape(4, 2, env.batch, env.block_in);
    const auto b_shape = te::shape(4, 2, env.block_out, env.block_in);
    const auto c_shape = te::shape(4, 4, env.batch, env.block_out);
    A = te::placeholder(a_shape, env.inp_dtype, "A");
    B = te::placeholder(b_shape, env.wgt_dtype, "B");
    bias = te::placeholder(c_shape, env.acc_dtype, "bias");
    A_buf = te::compute(
        a_shape, [&](auto... i) { return A(i...); }, "A_buf");
    B_buf = te::compute(
        b_shape, [&](auto... i) { return B(i...); }, "B_buf");
    bias_buf = te::compute(
        c_shape, [&](auto... i) { return bias(i...); }, "bias_buf");
    ko = te::reduce_axis({0, 2}, "ko");
    ki = te::reduce_axis({0, env.block_in}, "ki");
    C_buf = te::compute(
        c_shape,
        [&](auto bo, auto co, auto bi, auto ci) {
          return te::sum(te::cast(env.acc_dtype, A_buf(bo, ko, bi, ki)) *
                             te::cast(env.acc_dtype, B_buf(co, ko, ci, ki)),
                         {ko, ki});
        },
        "C_buf");
    C_bias = te::compute(
        c_shape, [&](auto... i) { return C_buf(i...) + bias_buf(i...); }, "C_bias");
    C = te::compute(
        c_shape, [&](auto... i) { return te::cast(env.inp_dtype, C_bias(i...)); }, "C");
  }
  std::vector<te::Tensor> args() const { return {A, B, bias, C}; }
  // The tutorial's schedule without the scope of `unscoped` (if any) and, unless `tensorize`,
  // without the GEMM tensorization.
  te::Schedule schedule(const te::Tensor* unscoped = nullptr, bool tensorize = true) const {
    auto s = te::create_schedule(C);
    s[A_buf].set_scope(env.inp_scope);
    s[B_buf].set_scope(env.wgt_scope);
    for (const auto* t : {&C_buf, &C_bias, &bias_buf})
      if (t != unscoped) s[*t].set_scope(env.acc_scope);
    const auto c = s[C_buf].node()->root;
    s[C_buf].reorder({ko, c[0], c[1], c[2], c[3], ki});
    s[A_buf].compute_at(s[C_buf], ko);
    s[B_buf].compute_at(s[C_buf], ko);
    for (const auto& t : {A_buf, B_buf, bias_buf}) s[t].pragma(s[t].axis(0), env.dma_copy);
    s[C].pragma(s[C].axis(0), env.dma_copy);
    s[C_bias].pragma(s[C_bias].axis(0), env.alu);
    if (tensorize) s[C_buf].tensorize(c[2], env.gemm);
    return s;
  }
};
}  // namespace

TEST_CASE("vta errors: a stage left unmapped or without its scope is named, with the fix") {
  FcBias f;
  {
    // The complete schedule runs.
    auto s = f.schedule();
    const auto prog = vta::build(s, f.args(), f.env);
    vta::SimDevice dev(f.env.config);
    auto a = te::NDArray::random(f.env.inp_dtype, {4, 2, 1, 16}, 1);
    auto b = te::NDArray::random(f.env.wgt_dtype, {4, 2, 16, 16}, 2, -4, 4);
    auto bias = te::NDArray::random(f.env.acc_dtype, {4, 4, 1, 16}, 3, -50, 50);
    te::NDArray c(f.env.inp_dtype, {4, 4, 1, 16});
    CHECK(prog.run(dev, {&a, &b, &bias, &c}).result.finished);
    CHECK(c == te::evaluate(f.C, {{f.A, a}, {f.B, b}, {f.bias, bias}}));
  }
  {
    // Forgetting tensorize: the message says what the stage computes and where it runs.
    auto s = f.schedule(nullptr, false);
    CHECK_THROWS_WITH_AS(
        vta::build(s, f.args(), f.env),
        "stage 'C_buf' is not mapped to VTA: it is a sum of products, `(cast(int32, A_buf[ki + "
        "(i0*16)])*cast(int32, B_buf[ki + (i1*256) + (i3*16)]))`, which VTA computes on its GEMM "
        "core: tensorize it, s[C_buf].tensorize(axis, env.gemm), at the axis whose loops inward "
        "are a 1x16 output tile and a 16-element reduction",
        dlavm::ScheduleError);
  }
  {
    // The GEMM's output without the accumulator scope: named as C_bias reads it, even though
    // the storage pass gives C_bias the storage of bias_buf.
    auto s = f.schedule(&f.C_buf);
    CHECK_THROWS_WITH_AS(vta::build(s, f.args(), f.env),
                         "stage 'C_bias' runs on VTA's ALU (the alu pragma), which reads only the "
                         "accumulator (local.acc_buffer), but it reads buffer 'C_buf', which is in "
                         "global: s[C_buf].set_scope(env.acc_scope)",
                         dlavm::ScheduleError);
  }
  {
    auto s = f.schedule(&f.C_bias);
    CHECK_THROWS_WITH_AS(vta::build(s, f.args(), f.env),
                         "stage 'C_bias' runs on VTA's ALU (the alu pragma), which computes in the "
                         "accumulator (local.acc_buffer), but its buffer 'C_bias' is in global: "
                         "s[C_bias].set_scope(env.acc_scope)",
                         dlavm::ScheduleError);
  }
  {
    auto s = f.schedule(&f.bias_buf);
    CHECK_THROWS_WITH_AS(vta::build(s, f.args(), f.env),
                         doctest::Contains("it reads buffer 'bias_buf', which is in global: "
                                           "s[bias_buf].set_scope(env.acc_scope)"),
                         dlavm::ScheduleError);
  }
  {
    // An ALU stage reading a DRAM tensor directly.
    Elementwise e([](te::Expr x) { return x + 1; });
    vta::Env& env = e.env;
    const auto shape = te::shape(1, 8, env.batch, env.block_out);
    auto S = te::compute(
        shape, [&](auto... i) { return te::max(e.A_buf(i...), e.A(i...)); }, "S");
    auto R = te::compute(
        shape, [&](auto... i) { return te::cast(env.inp_dtype, S(i...)); }, "R2");
    auto s = te::create_schedule(R);
    s[e.A_buf].set_scope(env.acc_scope);
    s[S].set_scope(env.acc_scope);
    s[e.A_buf].pragma(s[e.A_buf].axis(0), env.dma_copy);
    s[S].pragma(s[S].axis(0), env.alu);
    s[R].pragma(s[R].axis(0), env.dma_copy);
    CHECK_THROWS_WITH_AS(vta::build(s, {e.A, R}, env),
                         "stage 'S' runs on VTA's ALU (the alu pragma), which reads only the "
                         "accumulator (local.acc_buffer), but it reads DRAM tensor 'A': copy it "
                         "into the accumulator first (a stage that reads it, with "
                         "set_scope(env.acc_scope) and the dma_copy pragma)",
                         dlavm::ScheduleError);
  }
}

TEST_CASE("vta errors: reductions VTA's ALU cannot run say what it can") {
  vta::Env env;
  const auto shape = te::shape(4, 2, env.batch, env.block_out);
  auto A = te::placeholder(shape, env.acc_dtype, "A");
  auto A_buf = te::compute(
      shape, [&](auto... i) { return A(i...); }, "A_buf");
  const auto build = [&](const te::Tensor& red,
                         const std::function<void(te::Schedule&)>& more = {}) {
    auto R = te::compute(
        red.shape().size() == 4
            ? te::shape(red.shape()[0], red.shape()[1], red.shape()[2], red.shape()[3])
            : shape,
        [&](auto... i) { return te::cast(env.inp_dtype, red(i...)); }, "R");
    auto s = te::create_schedule(R);
    s[A_buf].set_scope(env.acc_scope);
    s[red].set_scope(env.acc_scope);
    s[A_buf].pragma(s[A_buf].axis(0), env.dma_copy);
    s[R].pragma(s[R].axis(0), env.dma_copy);
    if (more)
      more(s);
    else
      s[red].pragma(s[red].axis(0), env.alu);
    return vta::build(s, {A, R}, env);
  };
  const auto out = te::shape(2, 2, env.batch, env.block_out);
  {
    // The reduced value must be an accumulator tile as it is.
    auto k = te::reduce_axis({0, 2}, "k");
    auto red = te::compute(
        out,
        [&](auto i, auto j, auto b, auto l) { return te::max(A_buf(i * 2 + k, j, b, l) * 3, {k}); },
        "red");
    CHECK_THROWS_WITH_AS(
        build(red),
        "stage 'red': a reduction of `(A_buf[(k*32) + (i0*64) + (i1*16) + i3]*3)`, "
        "which is not an accumulator tile read as it is; compute `(A_buf[(k*32) "
        "+ (i0*64) + (i1*16) + i3]*3)` in a stage of its own first; VTA's ALU runs "
        "element-wise nests (min, max, add, multiply and shift of an accumulator "
        "tile by a tile or an immediate, subtraction by an immediate, constant "
        "fills) and reductions of accumulator tiles with max, min or sum over a "
        "window (te::max / te::min / te::sum), one instruction per window element",
        dlavm::ScheduleError);
  }
  {
    // A window that depends on the output row (triangular).
    te::IterVar k;
    auto red = te::compute(
        shape,
        [&](auto i, auto j, auto b, auto l) {
          k = te::reduce_axis({0, i + 1}, "k");
          return te::max(A_buf(k, j, b, l), {k});
        },
        "red");
    CHECK_THROWS_WITH_AS(build(red),
                         "stage 'red': the reduction loop 'k' has extent i0 + 1, which depends on "
                         "the output loop 'i0'; VTA's ALU reduces a window that is the same for "
                         "every output tile",
                         dlavm::ScheduleError);
  }
  {
    // The pragma on a reduction loop inside the first covers the update but not the init. (On
    // a data loop inside the reduction loops it covers both: the init's copy of that loop
    // keeps it, tests/vta_lower/test_alu_reduce.cpp.)
    auto k = te::reduce_axis({0, 2}, "k");
    auto k2 = te::reduce_axis({0, 2}, "k2");
    auto red = te::compute(
        out,
        [&](auto i, auto, auto b, auto l) {
          return te::max(A_buf(i * 2 + k, k2, b, l), {k, k2});
        },
        "red");
    CHECK_THROWS_WITH_AS(build(red,
                               [&](te::Schedule& s) {
                                 const auto ax = s[red].node()->root;
                                 s[red].reorder({k, ax[0], ax[1], k2, ax[2], ax[3]});
                                 s[red].pragma(k2, env.alu);
                               }),
                         "stage 'red': the alu pragma covers the update of its max reduction but "
                         "not its init (`red = -2147483648`), which te::lower puts outside the "
                         "first reduction loop; put the pragma on the stage's outermost loop, so "
                         "that it covers both",
                         dlavm::ScheduleError);
  }
}

TEST_CASE("vta errors: a split guard no transfer or ALU instruction can follow") {
  // 10 rows split by 3 over two virtual threads, the output copy's pragma on the loop outside
  // the split's inner loop: the guard `i0.inner + i0.outer.outer*6 + ... < 10` bounds two
  // loops of the copy nest, which no box of transfers covers.
  vta::Env env;
  auto shape = te::shape(10, 4, env.batch, env.block_out);
  auto A = te::placeholder(shape, env.acc_dtype, "A");
  auto A_buf = te::compute(
      shape, [&](auto... i) { return A(i...); }, "A_buf");
  auto C_buf = te::compute(
      shape, [&](auto... i) { return A_buf(i...) + 1; }, "C_buf");
  auto C = te::compute(
      shape, [&](auto... i) { return te::cast(env.inp_dtype, C_buf(i...)); }, "C");
  auto s = te::create_schedule(C);
  for (const auto& t : {A_buf, C_buf}) s[t].set_scope(env.acc_scope);
  auto [o, i] = s[C].split(s[C].axis(0), 3);
  auto [oo, tx] = s[C].split(o, 2);
  s[C].reorder({tx, oo, i});
  s[C].bind(tx, te::thread_axis("cthread"));
  for (const auto& t : {A_buf, C_buf}) s[t].compute_at(s[C], tx);
  s[A_buf].pragma(s[A_buf].axis(0), env.dma_copy);
  s[C_buf].pragma(s[C_buf].axis(0), env.alu);
  s[C].pragma(oo, env.dma_copy);
  CHECK_THROWS_WITH_AS(
      vta::build(s, {A, C}, env),
      "stage 'C': the copy nest at 'i0.outer.outer' is guarded by `if ((i0.inner + "
      "(i0.outer.outer*6) + (i0.outer.inner*3)) < 10)`, left by a split by 3 (loop 'i0.inner') of "
      "an axis of extent 10, which 3 does not divide; the guard `(i0.inner + (i0.outer.outer*6) + "
      "(i0.outer.inner*3)) < 10` does not bound exactly one loop linearly, so no set of VTA "
      "transfers covers the iterations it keeps; split by a factor that divides the extent",
      dlavm::ScheduleError);
}

TEST_CASE("vta errors: ALU nests under a split guard") {
  // The nest te::lower gives a split by 4 of 10 rows when it keeps a guard:
  //   for (o, 0, 3) for (i, 0, 4) for (l, 0, 16) if (o*4 + i < 10) R[...] = A[...] + 1
  vta::Env env;
  const auto acc = [&](const char* name) {
    return te::make_buffer(name, env.acc_dtype, {160}, env.acc_scope);
  };
  const auto R = acc("R_buf"), A = acc("A_buf");
  const auto o = ne::var("o", 0, 2), i = ne::var("i", 0, 3), l = ne::var("l", 0, 15);
  const ne::Expr at = ne::Expr(o) * 64 + ne::Expr(i) * 16 + l;
  const auto nest = [&](const ne::Expr& guard) {
    const auto store = tir::make_store(R, {at}, te::load(A, {at}) + 1);
    const auto body = tir::make_if(guard, store);
    const auto loops =
        tir::make_for(o, 0, 3, tir::ForKind::Serial,
                      tir::make_for(i, 0, 4, tir::ForKind::Serial,
                                    tir::make_for(l, 0, 16, tir::ForKind::Serial, body)));
    return tir::make_allocate(R,
                              tir::make_allocate(A, tir::make_attr("pragma_alu", "o", 1, loops)));
  };
  // A guard that bounds one loop (`i < 3`) clips it: 3 of the 4 rows of each block, merged
  // with the lanes into 3 tiles.
  const auto clipped = tir::to_string(vta::inject_alu(nest(ne::Expr(i) < 3), env));
  CHECK(clipped.find("for (o.t, 0, 3) {\n    for (l.t, 0, 3) {\n      @vta.gemm_reset(R_buf; "
                     "(o.t*4) + l.t)") != std::string::npos);
  // A guard on two loops of the nest cannot be clipped.
  CHECK_THROWS_WITH_AS(
      vta::inject_alu(nest(ne::Expr(o) * 4 + ne::Expr(i) < 10), env),
      "stage 'R_buf' (alu pragma at 'o'): it is guarded by `if (((o*4) + i) < 10)`, left by a "
      "split "
      "by 4 (loop 'i') of an axis of extent 10, which 4 does not divide, which no ALU instruction "
      "can skip; split by a factor that divides the extent; VTA's ALU runs element-wise nests "
      "(min, max, add, multiply and shift of an accumulator tile by a tile or an immediate, "
      "subtraction by an immediate, constant fills) and reductions of accumulator tiles with max, "
      "min or sum over a window (te::max / te::min / te::sum), one instruction per window element",
      dlavm::ScheduleError);
}

TEST_CASE("vta errors: a field that could overflow int64 for its dims' range keeps its checks") {
  // The last row of A[n, 64, 1, 16]: its DRAM offset, n*64 - 64 elements, overflows int64 for
  // n past 2^57, and at n = 2^58 + 1 wraps to 0, an offset the instruction could hold. The
  // plan's affine sums are used only where the bounds rule that out; this field keeps ne::eval's
  // checks, and the instantiation raises instead of loading row 0.
  const vta::Env env;
  const std::int64_t max_rows = (std::int64_t{1} << 58) + 1;
  const auto n = ne::var("n", 1, max_rows);
  const auto A = te::placeholder(te::shape(n, 64, 1, 16), env.acc_dtype, "A");
  const auto A_buf = te::compute(
      te::shape(1, 64, 1, 16),
      [&](auto i, auto j, auto k, auto l) { return A(i + n - 1, j, k, l); }, "A_buf");
  const auto B = te::compute(
      te::shape(1, 64, 1, 16), [&](auto... i) { return te::cast(env.inp_dtype, A_buf(i...)); },
      "B");
  auto s = te::create_schedule(B);
  s[A_buf].set_scope(env.acc_scope);
  s[A_buf].pragma(s[A_buf].axis(0), env.dma_copy);
  s[B].pragma(s[B].axis(0), env.dma_copy);
  const auto prog = vta::build(s, {A, B}, env, "last_row");
  CHECK(prog.general_fields() == 1);
  const std::vector<std::uint64_t> phys{0x100000, 0x200000};
  const auto load_dram = [&](std::int64_t rows) {
    const auto stream = prog.instantiate(std::vector<ne::Binding>{{"n", rows}}, phys);
    return vta::decode_all(env.config.layout(), stream.insns).front().dram_base;
  };
  // the ACC element is 64 bytes: 0x100000 is element 0x4000
  CHECK(load_dram(5) == 0x4000 + (4 * 64));
  CHECK(load_dram(std::int64_t{1} << 20) == 0x4000 + (((std::int64_t{1} << 20) - 1) * 64));
  CHECK_THROWS_WITH_AS(load_dram(max_rows), doctest::Contains("overflows int64"), dlavm::Error);
}

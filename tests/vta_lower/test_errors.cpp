// What a user gets for schedules VTA cannot run: a precise dlavm::Error, never a wrong program.
#include <dlavm/dlavm.hpp>

#include <doctest/doctest.h>

namespace te = dlavm::te;
namespace vta = dlavm::vta;

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
    Elementwise e([](te::Expr x) { return x >> x; });
    auto s = e.schedule();
    CHECK_THROWS_AS(vta::build(s, {e.A, e.R}, e.env), dlavm::ScheduleError);
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

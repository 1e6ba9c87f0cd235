// Tensorize: a user-declared intrinsic (a 4x4 matrix-vector product with int32 accumulation)
// replaces the matching loop nest; the interpreter executes it through a handler and the
// result equals te::evaluate. Mismatched nests are refused with precise errors.
#include <dlavm/schedule.hpp>
#include <dlavm/tir.hpp>

#include <doctest/doctest.h>

namespace te = dlavm::te;
namespace ne = dlavm::ne;
namespace tir = dlavm::tir;
namespace sch = dlavm::schedule;
using dlavm::DType;

namespace {

constexpr int kTile = 4;

// out[i] += sum_k cast(a[k]) * cast(w[i, k]) over a 4 x 4 tile.
std::shared_ptr<const sch::TensorIntrin> gemv_intrin(
    te::Expr (*combine)(te::Expr, std::vector<te::IterVar>) = nullptr) {
  auto a = te::placeholder(te::shape(kTile), DType::int8(), "a");
  auto w = te::placeholder(te::shape(kTile, kTile), DType::int8(), "w");
  auto k = te::reduce_axis({0, kTile}, "k");
  auto out = te::compute(
      te::shape(kTile),
      [&](auto i) {
        auto prod = te::cast(DType::int32(), a(k)) * te::cast(DType::int32(), w(i, k));
        return combine ? combine(prod, {k}) : te::sum(prod, {k});
      },
      "out");
  return sch::decl_tensor_intrin(
      out,
      [](const sch::IntrinCall& c) {
        if (!ne::equal(c.inputs[1].strides[1], 1))
          throw dlavm::ScheduleError(fmt::format("gemv: weight rows must be contiguous, stride {}",
                                                 c.inputs[1].strides[1]));
        auto args = [&](int reset) {
          return std::vector<te::Expr>{
              te::index_value(c.output.elem_offset), te::index_value(c.inputs[0].elem_offset),
              te::index_value(c.inputs[1].elem_offset), te::index_value(c.inputs[1].strides[0]),
              te::make_const(reset, DType::int32())};
        };
        const std::vector<te::Buffer> bufs{c.output.buffer, c.inputs[0].buffer, c.inputs[1].buffer};
        sch::IntrinBody b;
        b.body = {te::call("test.gemv", DType::int32(), args(1), bufs)};
        b.reset = {te::call("test.gemv_reset", DType::int32(),
                            {te::index_value(c.output.elem_offset)}, {c.output.buffer})};
        b.update = {te::call("test.gemv", DType::int32(), args(0), bufs)};
        return b;
      },
      "gemv");
}

void gemv_semantics(const te::CallNode& call, std::span<const std::int64_t> args,
                    std::span<te::NDArray* const> bufs) {
  auto& out = *bufs[0];
  if (call.name == "test.gemv_reset") {
    for (int i = 0; i < kTile; ++i) out.set_flat(static_cast<std::size_t>(args[0] + i), 0);
    return;
  }
  REQUIRE(call.name == "test.gemv");
  const auto& a = *bufs[1];
  const auto& w = *bufs[2];
  for (int i = 0; i < kTile; ++i) {
    const auto o = static_cast<std::size_t>(args[0] + i);
    std::int64_t acc = args[4] ? 0 : out.data()[o];
    for (int k = 0; k < kTile; ++k)
      acc += a.data()[static_cast<std::size_t>(args[1] + k)] *
             w.data()[static_cast<std::size_t>(args[2] + i * args[3] + k)];
    out.set_flat(o, acc);
  }
}

// y[n] = sum_k x[k] * W[n, k] with n = 12, k = 8, staged through copies like VTA's buffers.
struct Gemv {
  te::Tensor X, W, X_buf, W_buf, Y_buf, Y;
  te::IterVar k;
  int K;
  explicit Gemv(int depth = 8) : K(depth) {
    X = te::placeholder(te::shape(K), DType::int8(), "X");
    W = te::placeholder(te::shape(12, K), DType::int8(), "W");
    X_buf = te::compute(
        te::shape(K), [&](auto i) { return X(i); }, "X_buf");
    W_buf = te::compute(
        te::shape(12, K), [&](auto i, auto j) { return W(i, j); }, "W_buf");
    k = te::reduce_axis({0, K}, "k");
    Y_buf = te::compute(
        te::shape(12),
        [&](auto n) {
          return te::sum(te::cast(DType::int32(), X_buf(k)) * te::cast(DType::int32(), W_buf(n, k)),
                         {k});
        },
        "Y_buf");
    Y = te::compute(
        te::shape(12), [&](auto n) { return Y_buf(n); }, "Y");
  }
  void check(const tir::PrimFunc& f) const {
    auto x = te::NDArray::random(DType::int8(), {K}, 1);
    auto w = te::NDArray::random(DType::int8(), {12, K}, 2);
    te::NDArray y(DType::int32(), {12});
    tir::run(f, {&x, &w, &y}, {}, gemv_semantics);
    CHECK(y == te::evaluate(Y, {{X, x}, {W, w}}));
  }
};

}  // namespace

TEST_CASE("tensorize: a reduction entirely inside the intrinsic uses its body form") {
  Gemv g(kTile);
  auto s = te::create_schedule(g.Y);
  auto [no, ni] = s[g.Y_buf].split(s[g.Y_buf].axis(0), kTile);
  s[g.Y_buf].tensorize(ni, gemv_intrin());
  auto f = te::lower(s, {g.X, g.W, g.Y});
  const auto text = tir::to_string(f);
  INFO(text);
  CHECK(text.find("gemv_reset") == std::string::npos);
  CHECK(text.find("@test.gemv(Y_buf, X_buf, W_buf; i0.outer*4, 0, i0.outer*16, 4, 1)") !=
        std::string::npos);
  g.check(f);
}

TEST_CASE("tensorize: an outer reduction loop gets the reset form before it and updates inside") {
  Gemv g;
  auto s = te::create_schedule(g.Y);
  auto [no, ni] = s[g.Y_buf].split(s[g.Y_buf].axis(0), kTile);
  auto [ko, ki] = s[g.Y_buf].split(g.k, kTile);
  s[g.Y_buf].reorder({no, ko, ni, ki});
  s[g.Y_buf].tensorize(ni, gemv_intrin());
  auto f = te::lower(s, {g.X, g.W, g.Y});
  const auto text = tir::to_string(f);
  INFO(text);
  CHECK(text.find("@test.gemv_reset(Y_buf; i0.outer*4)") != std::string::npos);
  CHECK(text.find("@test.gemv(Y_buf, X_buf, W_buf; ") != std::string::npos);
  CHECK(text.find(", 0)") != std::string::npos);  // update, not reset
  CHECK(text.find("for (i0.inner") == std::string::npos);
  g.check(f);
}

TEST_CASE("tensorize: reset and update around an outer reduction loop, with staged copies") {
  Gemv g;
  auto s = te::create_schedule(g.Y);
  auto [no, ni] = s[g.Y_buf].split(s[g.Y_buf].axis(0), kTile);
  auto [ko, ki] = s[g.Y_buf].split(g.k, kTile);
  s[g.Y_buf].reorder({ko, no, ni, ki});
  s[g.X_buf].compute_at(s[g.Y_buf], ko);
  s[g.W_buf].compute_at(s[g.Y_buf], ko);
  s[g.Y_buf].tensorize(ni, gemv_intrin());
  auto f = te::lower(s, {g.X, g.W, g.Y});
  const auto text = tir::to_string(f);
  INFO(text);
  CHECK(text.find("for (i0.outer.init, 0, 3)") != std::string::npos);  // reset over the row blocks
  g.check(f);
}

TEST_CASE("tensorize: mismatched nests are refused naming stage, axis and numbers") {
  Gemv g;
  auto s = te::create_schedule(g.Y);
  auto [no, ni] = s[g.Y_buf].split(s[g.Y_buf].axis(0), 3);
  auto [ko, ki] = s[g.Y_buf].split(g.k, kTile);
  s[g.Y_buf].reorder({no, ko, ni, ki});
  s[g.Y_buf].tensorize(ni, gemv_intrin());
  CHECK_THROWS_WITH_AS(
      te::lower(s, {g.X, g.W, g.Y}),
      doctest::Contains("loop 'i0.inner' has extent 3, the intrinsic's axis 'i0' has 4"),
      dlavm::ScheduleError);
  Gemv h;
  auto s2 = te::create_schedule(h.Y);
  auto [no2, ni2] = s2[h.Y_buf].split(s2[h.Y_buf].axis(0), kTile);
  auto [ko2, ki2] = s2[h.Y_buf].split(h.k, kTile);
  s2[h.Y_buf].reorder({no2, ko2, ni2, ki2});
  s2[h.Y_buf].tensorize(ko2, gemv_intrin());
  CHECK_THROWS_WITH_AS(te::lower(s2, {h.X, h.W, h.Y}),
                       "stage 'Y_buf': tensorize at axis 'k.outer' with intrinsic 'gemv': the "
                       "loops from there inward have 1 data-parallel and 2 reduction axes, the "
                       "intrinsic has 1 and 1; tensorize at 'i0.inner' instead, where the "
                       "intrinsic's loops (i0.inner, k.inner) begin",
                       dlavm::ScheduleError);
  Gemv m;
  auto s3 = te::create_schedule(m.Y);
  auto [no3, ni3] = s3[m.Y_buf].split(s3[m.Y_buf].axis(0), kTile);
  auto [ko3, ki3] = s3[m.Y_buf].split(m.k, kTile);
  s3[m.Y_buf].reorder({no3, ko3, ni3, ki3});
  s3[m.Y_buf].tensorize(
      ni3, gemv_intrin([](te::Expr e, std::vector<te::IterVar> ax) { return te::max(e, ax); }));
  CHECK_THROWS_WITH_AS(te::lower(s3, {m.X, m.W, m.Y}),
                       doctest::Contains("does not match the intrinsic"), dlavm::ScheduleError);
  // A weight read transposed has the wrong strides for the intrinsic's operand.
  auto X = te::placeholder(te::shape(8), DType::int8(), "X");
  auto WT = te::placeholder(te::shape(8, 12), DType::int8(), "WT");
  auto k = te::reduce_axis({0, 8}, "k");
  auto Y = te::compute(
      te::shape(12),
      [&](auto n) {
        return te::sum(te::cast(DType::int32(), X(k)) * te::cast(DType::int32(), WT(k, n)), {k});
      },
      "Y");
  auto s5 = te::create_schedule(Y);
  auto [no5, ni5] = s5[Y].split(s5[Y].axis(0), kTile);
  auto [ko5, ki5] = s5[Y].split(k, kTile);
  s5[Y].reorder({no5, ko5, ni5, ki5});
  s5[Y].tensorize(ni5, gemv_intrin());
  // The match itself succeeds (a transposed operand has strides (1, 12)); the intrinsic
  // refuses operands it cannot address.
  CHECK_THROWS_WITH_AS(te::lower(s5, {X, WT, Y}),
                       doctest::Contains("weight rows must be contiguous, stride 12"),
                       dlavm::ScheduleError);
}

TEST_CASE("tensorize: loop order inside the tile does not matter") {
  Gemv t;
  auto s = te::create_schedule(t.Y);
  auto [no, ni] = s[t.Y_buf].split(s[t.Y_buf].axis(0), kTile);
  auto [ko, ki] = s[t.Y_buf].split(t.k, kTile);
  s[t.Y_buf].reorder({no, ko, ki, ni});
  s[t.Y_buf].tensorize(ki, gemv_intrin());
  t.check(te::lower(s, {t.X, t.W, t.Y}));
}

TEST_CASE("tensorize: a reduction loop left inside the tile gets the reorder that fixes it") {
  // Both axes split, no reorder: k.outer sits inside i0.inner, where the intrinsic has one
  // reduction loop only. The message gives the loop order; following it lowers and computes.
  Gemv g;
  auto s = te::create_schedule(g.Y);
  auto [no, ni] = s[g.Y_buf].split(s[g.Y_buf].axis(0), kTile);
  auto [ko, ki] = s[g.Y_buf].split(g.k, kTile);
  s[g.Y_buf].tensorize(ni, gemv_intrin());
  CHECK_THROWS_WITH_AS(te::lower(s, {g.X, g.W, g.Y}),
                       "stage 'Y_buf': tensorize at axis 'i0.inner' with intrinsic 'gemv': the "
                       "loops from there inward have 1 data-parallel and 2 reduction axes, the "
                       "intrinsic has 1 and 1; reorder so that the intrinsic's loops (i0.inner, "
                       "k.inner) are innermost with 'k.outer' outside them, and tensorize at the "
                       "first: s[Y_buf].reorder({i0.outer, k.outer, i0.inner, k.inner}); "
                       "s[Y_buf].tensorize(i0.inner, ...)",
                       dlavm::ScheduleError);
  s[g.Y_buf].reorder({no, ko, ni, ki});
  g.check(te::lower(s, {g.X, g.W, g.Y}));
  // Too few loops of a kind anywhere in the stage: no order helps.
  auto s2 = te::create_schedule(g.Y);
  s2[g.Y].tensorize(s2[g.Y].axis(0), gemv_intrin());
  CHECK_THROWS_WITH_AS(te::lower(s2, {g.X, g.W, g.Y}),
                       "stage 'Y': tensorize at axis 'i0' with intrinsic 'gemv': the loops from "
                       "there inward have 1 data-parallel and 0 reduction axes, the intrinsic has "
                       "1 and 1; stage 'Y' has only 1 data-parallel and 0 reduction loops in all",
                       dlavm::ScheduleError);
}

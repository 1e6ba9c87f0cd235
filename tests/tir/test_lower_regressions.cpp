// Lowering regressions (issue 11): schedules that lowered to silently wrong programs. Each one
// now either computes what te::evaluate computes, or raises a dlavm::Error that names what is
// wrong; the cases here are the reported ones and their close variants. The classes behind
// them are covered by the seeded random schedules in test_random_schedules.cpp.
#include <dlavm/schedule.hpp>
#include <dlavm/tir.hpp>
#include <dlavm/tir/loop_scope_check.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace te = dlavm::te;
namespace ne = dlavm::ne;
namespace tir = dlavm::tir;
using dlavm::DType;

namespace {

std::vector<std::int64_t> shape_of(const te::Tensor& t, const std::vector<ne::Binding>& b) {
  std::vector<std::int64_t> dims;
  for (const auto& d : t.shape()) dims.push_back(ne::eval(d, b));
  return dims;
}

// Lowers s for (inputs..., output), runs it on seeded random inputs and compares the output
// with te::evaluate of the same tensor.
void check_lowered(te::Schedule& s, const std::vector<te::Tensor>& inputs, const te::Tensor& out,
                   const std::vector<ne::Binding>& bindings = {}, std::uint64_t seed = 1) {
  auto args = inputs;
  args.push_back(out);
  const auto f = te::lower(s, args, "f");
  INFO(tir::to_string(f));
  std::vector<te::NDArray> arrays;
  for (std::size_t k = 0; k < inputs.size(); ++k)
    arrays.push_back(
        te::NDArray::random(inputs[k].dtype(), shape_of(inputs[k], bindings), seed + k, -50, 50));
  std::vector<te::TensorBinding> bound;
  for (std::size_t k = 0; k < inputs.size(); ++k) bound.emplace_back(inputs[k], arrays[k]);
  te::NDArray result(out.dtype(), shape_of(out, bindings));
  std::vector<te::NDArray*> ptrs;
  for (auto& a : arrays) ptrs.push_back(&a);
  ptrs.push_back(&result);
  tir::run(f, ptrs, bindings);
  CHECK(result == te::evaluate(out, bound, bindings));
}

}  // namespace

// ---- 1: reduction axes that do not start at 0 ------------------------------------------------

TEST_CASE("regression: a reduction over {3, 4} reads column 3, not 6") {
  auto A = te::placeholder(te::shape(5, 8), DType::int32(), "A");
  auto k = te::reduce_axis({3, 4}, "k");
  auto R = te::compute(
      te::shape(5), [&](auto i) { return te::sum(A(i, k), {k}); }, "R");
  auto s = te::create_schedule(R);
  const auto f = te::lower(s, {A, R});
  CHECK(tir::to_string(f.body).find("A[(i0*8) + 3]") != std::string::npos);
  check_lowered(s, {A}, R);
}

TEST_CASE("regression: a reduction over {8, 16} with floordiv/floormod of k stays in bounds") {
  auto A = te::placeholder(te::shape(5, 16), DType::int32(), "A");
  auto k = te::reduce_axis({8, 16}, "k");
  auto R = te::compute(
      te::shape(5),
      [&](auto i) { return te::sum(A(i, ne::floordiv(k, 8) + ne::floormod(k, 8)), {k}); }, "R");
  auto s = te::create_schedule(R);
  check_lowered(s, {A}, R);
  SUBCASE("split by a factor that does not divide the extent") {
    s[R].split(k, 3);
    check_lowered(s, {A}, R);
  }
}

TEST_CASE(
    "regression: cache_read computed at a reduction loop that starts at 8 holds one element") {
  auto A = te::placeholder(te::shape(5, 16), DType::int32(), "A");
  auto k = te::reduce_axis({8, 16}, "k");
  auto R = te::compute(
      te::shape(5), [&](auto i) { return te::sum(A(i, k), {k}); }, "R");
  auto s = te::create_schedule(R);
  auto A_local = s.cache_read(A, "local", {R});
  s[A_local].compute_at(s[R], k);
  const auto f = te::lower(s, {A, R});
  CHECK(tir::to_string(f.body).find("allocate(A.local, int32, [1])") != std::string::npos);
  check_lowered(s, {A}, R);
}

TEST_CASE("regression: a reduction starting at a symbolic offset, split and reordered") {
  auto n = ne::var("n", 1, 20);
  auto A = te::placeholder(te::shape(4, n + 9), DType::int32(), "A");
  auto k = te::reduce_axis({n, n + 9}, "k");
  auto R = te::compute(
      te::shape(4), [&](auto i) { return te::sum(A(i, k), {k}); }, "R");
  auto s = te::create_schedule(R);
  auto [ko, ki] = s[R].split(k, 4);
  s[R].reorder({ko, s[R].axis(0), ki});
  for (std::int64_t v : {1, 7, 20}) check_lowered(s, {A}, R, {{"n", v}});
}

// ---- 4: reductions whose range depends on a data-parallel axis -------------------------------

TEST_CASE("regression: a triangular reduction k < i + 1 survives splits of i and of k") {
  auto A = te::placeholder(te::shape(8, 8), DType::int32(), "A");
  te::IterVar k;
  auto R = te::compute(
      te::shape(8),
      [&](auto i) {
        k = te::reduce_axis({0, i + 1}, "k");
        return te::sum(A(i, k), {k});
      },
      "R");
  auto s = te::create_schedule(R);
  auto [io, ii] = s[R].split(s[R].axis(0), 3);
  const auto f = te::lower(s, {A, R});
  // The extent names the loops i became, not i; i = 8, 9 (past the guard) count as i = 7.
  CHECK(tir::to_string(f.body).find("for (k, 0, min((i0.outer*3) + i0.inner, 7) + 1)") !=
        std::string::npos);
  check_lowered(s, {A}, R);
  SUBCASE("k split by 2, its last block partial") {
    s[R].split(k, 2);
    check_lowered(s, {A}, R);
  }
  SUBCASE("i's loops fused") {
    s[R].fuse(io, ii);
    check_lowered(s, {A}, R);
  }
}

TEST_CASE("regression: split_nparts of a triangular reduction, whose part size names i") {
  auto A = te::placeholder(te::shape(9, 9), DType::int32(), "A");
  te::IterVar k;
  auto R = te::compute(
      te::shape(9),
      [&](auto i) {
        k = te::reduce_axis({0, i + 1}, "k");
        return te::sum(A(i, k) * 3, {k});
      },
      "R");
  auto s = te::create_schedule(R);
  s[R].split(s[R].axis(0), 4);
  auto [ko, ki] = s[R].split_nparts(k, 2);
  check_lowered(s, {A}, R);
  s[R].split_nparts(ko, 3);
  check_lowered(s, {A}, R);
  (void)ki;
}

namespace {
// R(i, j) = sum over k of (A(i, k) - 1) * B_buf(k, j), k in [0, i + 1) or in [i, 7).
struct Triangular {
  te::Tensor A, B, A_buf, B_buf, R;
  te::IterVar k;
  explicit Triangular(bool suffix) {
    A = te::placeholder(te::shape(7, 7), DType::int32(), "A");
    B = te::placeholder(te::shape(7, 5), DType::int32(), "B");
    A_buf = te::compute(
        te::shape(7, 7), [&](auto i, auto k) { return A(i, k) - 1; }, "A_buf");
    B_buf = te::compute(
        te::shape(7, 5), [&](auto k, auto j) { return B(k, j) * 2; }, "B_buf");
    R = te::compute(
        te::shape(7, 5),
        [&](auto i, auto j) {
          k = suffix ? te::reduce_axis({i, 7}, "k") : te::reduce_axis({0, i + 1}, "k");
          return te::sum(A_buf(i, k) * B_buf(k, j), {k});
        },
        "R");
  }
};
}  // namespace

TEST_CASE("regression: a triangular loop on an iteration the guard skips stays in k's range") {
  // i = 7 exists only as an iteration the guard skips (7 rows split by 2, the inner loop
  // outside); k < i + 1 must not run to 7 there, where B_buf would read row 7 of B.
  Triangular g(false);
  auto s = te::create_schedule(g.R);
  auto [io, ii] = s[g.R].split(s[g.R].axis(0), 2);
  s[g.R].reorder({ii, io});
  s[g.B_buf].compute_at(s[g.R], g.k);
  s[g.A_buf].compute_inline();
  check_lowered(s, {g.A, g.B}, g.R);
}

TEST_CASE("regression: split_nparts of a suffix reduction, fused and split again, past a guard") {
  // At i = 7, past the guard, k in [7, 7) has parts of size 0: the loop counts built from
  // them must not divide by 0.
  Triangular g(true);
  auto s = te::create_schedule(g.R);
  auto [io, ii] = s[g.R].split(s[g.R].axis(0), 4);
  s[g.R].fuse(ii, s[g.R].axis(1));
  auto [ko, ki] = s[g.R].split_nparts(g.k, 2);
  const auto kf = s[g.R].fuse(ko, ki);
  auto [kfo, kfi] = s[g.R].split_nparts(kf, 2);
  s[g.A_buf].compute_at(s[g.R], kfi);
  s[g.B_buf].compute_at(s[g.R], kfi);
  check_lowered(s, {g.A, g.B}, g.R);
  (void)io, (void)kfo;
}

TEST_CASE("regression: a reduction bounded by an earlier reduction, both split") {
  auto A = te::placeholder(te::shape(8, 8), DType::int32(), "A");
  auto B = te::placeholder(te::shape(8, 8), DType::int32(), "B");
  te::IterVar k1, k2;
  auto T = te::compute(
      te::shape(8),
      [&](auto i) {
        k1 = te::reduce_axis({0, 8}, "k1");
        k2 = te::reduce_axis({0, k1.var() + 1}, "k2");
        return te::sum(A(i, k1) * B(k1, k2), {k1, k2});
      },
      "T");
  auto s = te::create_schedule(T);
  s[T].split(k1, 3);
  s[T].split(k2, 2);
  check_lowered(s, {A, B}, T);
}

TEST_CASE("regression: a reduction loop outside a loop its range depends on is refused") {
  auto A = te::placeholder(te::shape(8, 8), DType::int32(), "A");
  te::IterVar k;
  auto R = te::compute(
      te::shape(8),
      [&](auto i) {
        k = te::reduce_axis({0, i + 1}, "k");
        return te::sum(A(i, k), {k});
      },
      "R");
  auto s = te::create_schedule(R);
  auto [io, ii] = s[R].split(s[R].axis(0), 3);
  s[R].reorder({io, k, ii});
  CHECK_THROWS_WITH_AS(te::lower(s, {A, R}),
                       "stage 'R': loop 'k' has extent min((i0.outer*3) + i0.inner, 7) + 1, which "
                       "depends on loop 'i0.inner' inside it; reorder so that 'k' is inside the "
                       "loops its range depends on",
                       dlavm::ScheduleError);
}

TEST_CASE("regression: a compute indexing with another compute's axis is refused by name") {
  auto A = te::placeholder(te::shape(4), DType::int32(), "A");
  auto B = te::compute(
      te::shape(4), [&](auto i) { return A(i) + 1; }, "B");
  const auto b_axis = B.op()->axis[0];
  auto C = te::compute(
      te::shape(4), [&](auto) { return B(b_axis); }, "C");
  auto s = te::create_schedule(C);
  CHECK_THROWS_WITH_AS(te::lower(s, {A, C}),
                       "compute 'C' uses 'i0', an axis of compute 'B' (in i0); index with the "
                       "compute's own axes, its reduction axes and symbolic dims",
                       dlavm::ScheduleError);
}

TEST_CASE(
    "regression: a loop variable outside its loop is reported as a loop, not a symbolic dim") {
  auto i = ne::var("i", 0, 7);
  auto buf = te::make_buffer("X", DType::int32(), {8}, "global");
  const auto stray = tir::make_store(buf, {i}, te::detail::make_const(1, DType::int32()));
  const auto check = [&](const tir::Stmt& body) {
    tir::detail::LoopScopeCheck(std::string("f"), {{i.id(), "axis 'i' of stage 'X'"}}).visit(body);
  };
  CHECK_NOTHROW(check(tir::make_for(i, 0, 8, tir::ForKind::Serial, stray)));
  CHECK_THROWS_WITH_AS(check(stray),
                       "internal: lowering 'f' uses loop variable 'i' (axis 'i' of stage 'X') "
                       "outside its loop, in i; please report",
                       dlavm::ScheduleError);
}

// ---- 2: compute_at, then split or fuse of the attach loop ------------------------------------

namespace {
// B = A + 1 and C = B * 2 over rows x cols, B attached by the caller.
struct Chain2d {
  te::Tensor A, B, C;
  Chain2d(int rows, int cols) {
    A = te::placeholder(te::shape(rows, cols), DType::int32(), "A");
    B = te::compute(
        te::shape(rows, cols), [&](auto i, auto j) { return A(i, j) + 1; }, "B");
    C = te::compute(
        te::shape(rows, cols), [&](auto i, auto j) { return B(i, j) * 2; }, "C");
  }
};
}  // namespace

TEST_CASE("regression: a producer attached at a loop that is then split moves to the inner loop") {
  Chain2d g(10, 3);
  auto s = te::create_schedule(g.C);
  s[g.B].compute_at(s[g.C], s[g.C].axis(0));
  auto [io, ii] = s[g.C].split(s[g.C].axis(0), 4);
  CHECK(s[g.B].node()->attach_ivar == ii);
  const auto f = te::lower(s, {g.A, g.C});
  CHECK(tir::to_string(f.body).find("allocate(B, int32, [3])") != std::string::npos);
  check_lowered(s, {g.A}, g.C);
  SUBCASE("the loops then reordered: B follows i.inner outside i.outer") {
    s[g.C].reorder({ii, io});
    check_lowered(s, {g.A}, g.C);
  }
  SUBCASE("the inner loop split again") {
    s[g.C].split(ii, 3);
    check_lowered(s, {g.A}, g.C);
  }
}

TEST_CASE("regression: a producer attached at a loop that is then fused moves to the fused loop") {
  Chain2d g(6, 5);
  auto s = te::create_schedule(g.C);
  SUBCASE("attached at the outer loop") { s[g.B].compute_at(s[g.C], s[g.C].axis(0)); }
  SUBCASE("attached at the inner loop") { s[g.B].compute_at(s[g.C], s[g.C].axis(1)); }
  const auto fused = s[g.C].fuse(s[g.C].axis(0), s[g.C].axis(1));
  CHECK(s[g.B].node()->attach_ivar == fused);
  check_lowered(s, {g.A}, g.C);
  s[g.C].split(fused, 4);
  check_lowered(s, {g.A}, g.C);
}

TEST_CASE("regression: a producer attached at a tiled loop, then its own loops scheduled") {
  Chain2d g(7, 9);
  auto s = te::create_schedule(g.C);
  s[g.B].compute_at(s[g.C], s[g.C].axis(1));
  auto [xo, yo, xi, yi] = s[g.C].tile(s[g.C].axis(0), s[g.C].axis(1), 3, 4);
  CHECK(s[g.B].node()->attach_ivar == yi);
  s[g.B].split(s[g.B].axis(1), 2);
  check_lowered(s, {g.A}, g.C);
  (void)xo, (void)yo, (void)xi;
}

TEST_CASE("regression: an attach loop the parent's nest does not have is an error, not a drop") {
  Chain2d g(4, 4);
  auto D = te::compute(
      te::shape(4, 4), [&](auto i, auto j) { return g.C(i, j) - 1; }, "D");
  auto s = te::create_schedule(D);
  SUBCASE("the parent is inlined") {
    s[g.B].compute_at(s[g.C], s[g.C].axis(0));
    s[g.C].compute_inline();
    CHECK_THROWS_WITH_AS(
        te::lower(s, {g.A, D}),
        "stage 'B' is computed at loop 'i0' of stage 'C', but 'C' is inlined (compute_inline) and "
        "has no loops; compute 'B' at a loop of a stage that reads 'C', or at root",
        dlavm::ScheduleError);
  }
  SUBCASE("the loop is not one of the parent's loops (a broken schedule)") {
    s[g.B].compute_at(s[g.C], s[g.C].axis(0));
    s[g.B].node()->attach_ivar = s[g.C].axis(0);
    s[g.C].node()->leaf = {s[g.C].axis(1), s[g.C].axis(1)};
    CHECK_THROWS_WITH_AS(te::lower(s, {g.A, D}),
                         "internal: stage 'B' is computed at loop 'i0' of stage 'C', which is not "
                         "one of its loops (i1, i1); please report",
                         dlavm::ScheduleError);
  }
}

TEST_CASE("regression: fuse given references into the leaf list still moves the attached stage") {
  Chain2d g(5, 6);
  auto s = te::create_schedule(g.C);
  s[g.B].compute_at(s[g.C], s[g.C].axis(0));
  const auto& leaf = s[g.C].leaf_iter_vars();
  const auto fused = s[g.C].fuse(leaf[0], leaf[1]);
  CHECK(s[g.B].node()->attach_ivar == fused);
  check_lowered(s, {g.A}, g.C);
}

TEST_CASE("regression: a producer attached inside a tensorized region is refused") {
  auto a = te::placeholder(te::shape(4), DType::int32(), "a");
  auto copy = te::compute(
      te::shape(4), [&](auto i) { return a(i); }, "copy");
  auto intrin = dlavm::schedule::decl_tensor_intrin(
      copy, [](const dlavm::schedule::IntrinCall&) { return dlavm::schedule::IntrinBody{}; },
      "copy4");
  Chain2d g(8, 4);
  auto s = te::create_schedule(g.C);
  s[g.B].compute_at(s[g.C], s[g.C].axis(1));
  s[g.C].tensorize(s[g.C].axis(1), intrin);
  CHECK_THROWS_WITH_AS(te::lower(s, {g.A, g.C}),
                       "stage 'B' is computed at loop 'i1' of stage 'C', which the intrinsic "
                       "'copy4' replaces (tensorize at 'i1'); compute 'B' at a loop outside 'i1'",
                       dlavm::ScheduleError);
}

// ---- 3: regions of attached stages on iterations a guard skips --------------------------------

TEST_CASE("regression: fused loops of a stage attached past a guarded edge do not run") {
  Chain2d g(6, 10);
  auto s = te::create_schedule(g.C);
  auto [io, ii] = s[g.C].split(s[g.C].axis(0), 4);
  auto [jo, ji] = s[g.C].split(s[g.C].axis(1), 7);
  s[g.C].reorder({io, jo, ii, ji});
  s[g.C].fuse(io, jo);
  const auto inner = s[g.C].fuse(ii, ji);
  s[g.B].compute_at(s[g.C], inner);
  s[g.B].fuse(s[g.B].axis(0), s[g.B].axis(1));
  const auto f = te::lower(s, {g.A, g.C});
  CHECK(tir::to_string(f.body).find("allocate(B, int32, [1])") != std::string::npos);
  check_lowered(s, {g.A}, g.C);
}

TEST_CASE("regression: a reversed read past a guarded edge gives an empty region, not a negative") {
  auto A = te::placeholder(te::shape(7, 5), DType::int32(), "A");
  auto B = te::compute(
      te::shape(7, 5), [&](auto i, auto j) { return A(i, j) * 3; }, "B");
  auto C = te::compute(
      te::shape(7, 5), [&](auto i, auto j) { return B(6 - i, 4 - j) + 1; }, "C");
  auto s = te::create_schedule(C);
  auto [io, ii] = s[C].split(s[C].axis(0), 3);  // i up to 8: B row -2
  auto [jo, ji] = s[C].split(s[C].axis(1), 4);  // j up to 7: B column -3
  s[C].reorder({io, jo, ii, ji});
  const auto inner = s[C].fuse(ii, ji);
  s[B].compute_at(s[C], inner);
  s[B].fuse(s[B].axis(0), s[B].axis(1));
  check_lowered(s, {A}, C);
}

TEST_CASE("regression: fused reductions that are empty for small n run no iterations") {
  auto n = ne::var("n", 1, 12);
  auto A = te::placeholder(te::shape(4, n * 2), DType::int32(), "A");
  auto k1 = te::reduce_axis({0, n - 5}, "k1");
  auto k2 = te::reduce_axis({0, n - 5}, "k2");
  auto R = te::compute(
      te::shape(4),
      [&](auto i) {
        return te::sum(A(i, k1.var() + k2.var()), {k1, k2});
      },
      "R");
  auto s = te::create_schedule(R);
  s[R].fuse(k1, k2);  // for n = 3 both extents are -2: the product must not be 4
  for (std::int64_t v : {1, 3, 5, 6, 12}) check_lowered(s, {A}, R, {{"n", v}});
}

// ---- 6: reads whose bounds depend on the relation between an axis and its dim ---------------

TEST_CASE("regression: a reversed read over a symbolic dim lowers and computes") {
  auto n = ne::var("n", 1, 100);
  auto Y = te::placeholder(te::shape(n, 4), DType::int32(), "Y");
  auto Z = te::compute(
      te::shape(n, 4), [&](auto i, auto j) { return Y(n - 1 - i, j); }, "Z");
  auto s = te::create_schedule(Z);
  s[Z].split(s[Z].axis(0), 8);
  for (std::int64_t v : {1, 7, 8, 100}) check_lowered(s, {Y}, Z, {{"n", v}});
}

TEST_CASE("regression: a reduction from i to 8, split, and a reversed producer attached inside") {
  auto A = te::placeholder(te::shape(8, 8), DType::int32(), "A");
  auto B = te::compute(
      te::shape(8, 8), [&](auto i, auto j) { return A(7 - i, j) - 3; }, "B");
  te::IterVar k;
  auto R = te::compute(
      te::shape(8),
      [&](auto i) {
        k = te::reduce_axis({i, 8}, "k");
        return te::sum(B(i, k), {k});
      },
      "R");
  auto s = te::create_schedule(R);
  s[R].split(s[R].axis(0), 3);
  auto [ko, ki] = s[R].split(k, 3);
  s[B].compute_at(s[R], ko);
  check_lowered(s, {A}, R);
}

TEST_CASE("regression: cache_write of a triangular reduction renames the axis its range names") {
  auto A = te::placeholder(te::shape(6, 6), DType::int32(), "A");
  te::IterVar k;
  auto R = te::compute(
      te::shape(6),
      [&](auto i) {
        k = te::reduce_axis({0, i + 1}, "k");
        return te::sum(A(i, k), {k});
      },
      "R");
  auto s = te::create_schedule(R);
  auto R_local = s.cache_write(R, "local");
  s[R_local].split(s[R_local].axis(0), 4);
  s[R_local].compute_at(s[R], s[R].axis(0));
  check_lowered(s, {A}, R);
}

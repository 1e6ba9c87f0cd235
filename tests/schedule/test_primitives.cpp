// Schedule primitives: their effect on a stage's loops, cache_read/cache_write rewriting, and
// the errors a user gets for impossible requests.
#include <dlavm/schedule.hpp>
#include <dlavm/tir.hpp>

#include <doctest/doctest.h>

namespace te = dlavm::te;
namespace ne = dlavm::ne;
namespace tir = dlavm::tir;
using dlavm::DType;
using dlavm::ScheduleError;

namespace {
std::vector<std::string> leaf_names(te::Stage st) {
  std::vector<std::string> names;
  for (const auto& v : st.leaf_iter_vars()) names.push_back(v.name());
  return names;
}

struct Chain {
  te::Tensor A, B, C;
  te::IterVar k;
  Chain() {
    A = te::placeholder(te::shape(12, 10), DType::int32(), "A");
    B = te::compute(
        te::shape(12, 10), [&](auto i, auto j) { return A(i, j) + 1; }, "B");
    k = te::reduce_axis({0, 10}, "k");
    C = te::compute(
        te::shape(12), [&](auto i) { return te::sum(B(i, k), {k}); }, "C");
  }
  void check(const tir::PrimFunc& f) const {
    auto a = te::NDArray::random(DType::int32(), {12, 10}, 3, -1000, 1000);
    te::NDArray c(DType::int32(), {12});
    tir::run(f, {&a, &c});
    CHECK(c == te::evaluate(C, {{A, a}}));
  }
};
}  // namespace

TEST_CASE("primitives: split, tile, fuse, reorder shape the loop nest") {
  Chain g;
  auto s = te::create_schedule(g.C);
  auto [io, ii] = s[g.C].split(s[g.C].axis(0), 5);
  CHECK(leaf_names(s[g.C]) == std::vector<std::string>{"i0.outer", "i0.inner", "k"});
  CHECK(io.dom().extent.as_int() == 3);  // ceil(12 / 5)
  s[g.C].reorder({g.k, io});
  CHECK(leaf_names(s[g.C]) == std::vector<std::string>{"k", "i0.inner", "i0.outer"});
  auto [xo, yo, xi, yi] = s[g.B].tile(s[g.B].axis(0), s[g.B].axis(1), 4, 3);
  CHECK(leaf_names(s[g.B]) ==
        std::vector<std::string>{"i0.outer", "i1.outer", "i0.inner", "i1.inner"});
  auto fused = s[g.B].fuse(xi, yi);
  CHECK(fused.dom().extent.as_int() == 12);
  CHECK(leaf_names(s[g.B]) ==
        std::vector<std::string>{"i0.outer", "i1.outer", "i0.inner.i1.inner.fused"});
  auto [no, ni] = s[g.B].split_nparts(xo, 2);
  CHECK(no.dom().extent.as_int() == 2);
  CHECK(ni.dom().extent.as_int() == 2);
  s[g.B].unroll(ni);
  g.check(te::lower(s, {g.A, g.C}));
}

TEST_CASE("primitives: compute_at, inline and a virtual thread lower to equal results") {
  Chain g;
  auto s = te::create_schedule(g.C);
  auto [ko, ki] = s[g.C].split(g.k, 4);
  s[g.B].compute_at(s[g.C], ko);
  auto f = te::lower(s, {g.A, g.C});
  const auto text = tir::to_string(f);
  CHECK(text.find("allocate(B, int32, [4])") != std::string::npos);  // one block of k
  // 10 is not a multiple of 4: the last block of k is a shorter inner loop, not a guard.
  CHECK(text.find("for (k.inner, 0, min(10 - (k.outer*4), 4))") != std::string::npos);
  g.check(f);
  s[g.B].compute_inline();
  const auto inlined = tir::to_string(te::lower(s, {g.A, g.C}));
  CHECK(inlined.find("allocate(B") == std::string::npos);
  g.check(te::lower(s, {g.A, g.C}));
  auto [o, i] = s[g.C].split(s[g.C].axis(0), 6);
  s[g.C].bind(o, te::thread_axis("cthread"));
  const auto vt = te::lower(s, {g.A, g.C});
  CHECK(tir::to_string(vt).find("vthread (i0.outer, 0, 2)") != std::string::npos);
  g.check(vt);
  (void)i;
}

TEST_CASE("primitives: a partial block outside its outer loop needs a guard") {
  Chain g;
  auto s = te::create_schedule(g.C);
  auto [o, i] = s[g.C].split(s[g.C].axis(0), 5);  // 12 rows: blocks of 5, 5, 2
  s[g.C].reorder({i, o});
  auto f = te::lower(s, {g.A, g.C});
  CHECK(tir::to_string(f).find("if (((i0.outer*5) + i0.inner) < 12)") != std::string::npos);
  g.check(f);
}

TEST_CASE("primitives: cache_read and cache_write insert copies in the given scope") {
  Chain g;
  auto s = te::create_schedule(g.C);
  auto B_local = s.cache_read(g.B, "local.inp_buffer", {g.C});
  auto C_acc = s.cache_write(g.C, "local.acc_buffer");
  CHECK(B_local.name() == "B.local.inp_buffer");
  CHECK(C_acc.name() == "C.local.acc_buffer");
  s[B_local].compute_at(s[C_acc], s[C_acc].reduce_axis(0));
  auto f = te::lower(s, {g.A, g.C});
  const auto text = tir::to_string(f);
  CHECK(text.find("storage_scope = local.inp_buffer") != std::string::npos);
  CHECK(text.find("storage_scope = local.acc_buffer") != std::string::npos);
  g.check(f);
}

TEST_CASE("primitives: impossible requests raise ScheduleError naming stage, axis and numbers") {
  Chain g;
  auto s = te::create_schedule(g.C);
  auto other = te::reduce_axis({0, 3}, "stranger");
  CHECK_THROWS_WITH_AS(s[g.C].split(other, 2),
                       doctest::Contains("'stranger', which is not one of its loops"),
                       ScheduleError);
  CHECK_THROWS_WITH_AS(s[g.C].split(s[g.B].axis(0), 2), doctest::Contains("belongs to stage 'B'"),
                       ScheduleError);
  CHECK_THROWS_WITH_AS(s[g.C].split(s[g.C].axis(0), 0), doctest::Contains("factor 0"),
                       ScheduleError);
  CHECK_THROWS_WITH_AS(s[g.C].split(s[g.C].axis(0), -3), doctest::Contains("factor -3"),
                       ScheduleError);
  CHECK_THROWS_WITH_AS(s[g.C].split_nparts(s[g.C].axis(0), 0), doctest::Contains("0 parts"),
                       ScheduleError);
  CHECK_THROWS_WITH_AS(s[g.C].reorder({g.k, g.k}), doctest::Contains("twice"), ScheduleError);
  auto [o, i] = s[g.C].split(s[g.C].axis(0), 4);
  CHECK_THROWS_WITH_AS(s[g.C].split(s[g.C].axis(0), 2), doctest::Contains("already split"),
                       ScheduleError);
  CHECK_THROWS_WITH_AS(s[g.C].fuse(o, g.k), doctest::Contains("directly inside"), ScheduleError);
  CHECK_THROWS_WITH_AS(s[g.C].fuse(i, g.k), doctest::Contains("data-parallel and reduction"),
                       ScheduleError);
  CHECK_THROWS_WITH_AS(s[g.C].compute_at(s[g.B], s[g.B].axis(0)),
                       doctest::Contains("does not consume"), ScheduleError);
  CHECK_THROWS_WITH_AS(s[g.B].compute_at(s[g.B], s[g.B].axis(0)), doctest::Contains("cycle"),
                       ScheduleError);
  CHECK_THROWS_WITH_AS(s[g.C].compute_inline(), doctest::Contains("reduction"), ScheduleError);
  CHECK_THROWS_WITH_AS(s[g.A].split(s[g.B].axis(0), 2), doctest::Contains("placeholder"),
                       ScheduleError);
  CHECK_THROWS_WITH_AS(s[g.C].set_scope("local.acc_buffer"), doctest::Contains("output"),
                       ScheduleError);
  CHECK_THROWS_WITH_AS(s[g.C].bind(g.k, te::thread_axis()), doctest::Contains("reduction axis 'k'"),
                       ScheduleError);
  CHECK_THROWS_AS(s[g.C].axis(1), ScheduleError);
  CHECK_THROWS_AS(s[g.C].reduce_axis(1), ScheduleError);
  CHECK_THROWS_WITH_AS(te::lower(s, {g.C}),
                       doctest::Contains("input 'A' is not among the arguments"), ScheduleError);
  auto X = te::placeholder(te::shape(4), DType::int32(), "X");
  CHECK_THROWS_WITH_AS(s[X], doctest::Contains("not part of this schedule"), ScheduleError);
  CHECK_THROWS_WITH_AS(s.cache_read(g.A, "local", {g.C}), doctest::Contains("does not read it"),
                       ScheduleError);
  CHECK_THROWS_WITH_AS(s.cache_write(g.C, "local"), doctest::Contains("before other primitives"),
                       ScheduleError);
}

TEST_CASE("primitives: a second reader outside the attach scope is refused at lowering") {
  auto A = te::placeholder(te::shape(8), DType::int32(), "A");
  auto B = te::compute(
      te::shape(8), [&](auto i) { return A(i) * 2; }, "B");
  auto C = te::compute(
      te::shape(8), [&](auto i) { return B(i) + 1; }, "C");
  auto D = te::compute(
      te::shape(8), [&](auto i) { return B(i) + C(i); }, "D");
  auto s = te::create_schedule(D);
  s[B].compute_at(s[C], s[C].axis(0));
  CHECK_THROWS_WITH_AS(te::lower(s, {A, D}),
                       doctest::Contains("stage 'D' reads it outside that loop"), ScheduleError);
}

TEST_CASE("primitives: symbolic extents stay symbolic through split and lowering") {
  auto token = ne::var("token", 1, 2048);
  auto A = te::placeholder(te::shape(token, 16), DType::int32(), "A");
  auto B = te::compute(
      te::shape(token, 16), [&](auto i, auto j) { return A(i, j) << 1; }, "B");
  auto s = te::create_schedule(B);
  s[B].split(s[B].axis(0), 8);
  auto f = te::lower(s, {A, B});
  const auto text = tir::to_string(f);
  CHECK(text.find("floordiv(token + 7, 8)") != std::string::npos);
  CHECK(text.find("for (i0.inner, 0, min(token - (i0.outer*8), 8))") != std::string::npos);
  for (std::int64_t t : {1, 8, 13, 2048}) {
    auto a = te::NDArray::random(DType::int32(), {t, 16}, static_cast<std::uint64_t>(t));
    te::NDArray b(DType::int32(), {t, 16});
    tir::run(f, {&a, &b}, {{"token", t}});
    CHECK(b == te::evaluate(B, {{A, a}}, {{"token", t}}));
  }
}

TEST_CASE("primitives: a stage computed at a row of a symbolic dim is that row, unclipped") {
  // B at C's row i (i < token): B's region is the one row [i, i], which no value of the loops
  // takes outside B, so it stays unclipped and B's loop over it disappears; B2, read one row
  // ahead (i + 1), can leave B2 at the last row and keeps its clip
  auto token = ne::var("token", 1, 64);
  auto A = te::placeholder(te::shape(ne::Expr(token) + 1, 16), DType::int32(), "A");
  auto B = te::compute(
      te::shape(token, 16), [&](auto i, auto j) { return A(i, j) * 3; }, "B");
  auto B2 = te::compute(
      te::shape(token, 16), [&](auto i, auto j) { return A(i, j) + 1; }, "B2");
  auto C = te::compute(
      te::shape(token, 16),
      [&](auto i, auto j) {
        return B(i, j) + te::select(ne::Expr(i) + 1 < ne::Expr(token), B2(i + 1, j), B2(i, j));
      },
      "C");
  auto s = te::create_schedule(C);
  s[B].compute_at(s[C], s[C].axis(0));
  s[B2].compute_at(s[C], s[C].axis(0));
  auto f = te::lower(s, {A, C});
  const auto text = tir::to_string(f);
  CAPTURE(text);
  CHECK(text.find("    for (i1, 0, 16) {\n      B[i1] = ") != std::string::npos);  // no row loop
  CHECK(text.find("min(i0 + 1, token - 1)") != std::string::npos);                 // B2's clip
  for (std::int64_t t : {1, 2, 37}) {
    auto a = te::NDArray::random(DType::int32(), {t + 1, 16}, static_cast<std::uint64_t>(t));
    te::NDArray c(DType::int32(), {t, 16});
    tir::run(f, {&a, &c}, {{"token", t}});
    CHECK(c == te::evaluate(C, {{A, a}}, {{"token", t}}));
  }
}

TEST_CASE("primitives: a region that can leave the stage keeps its clip, one that cannot none") {
  // B read one row behind (i - 1) keeps max(.., 0); B2 computed at the outer loop of a split
  // of a symbolic dim by 8 reads the block's rows, min(n - 8 io, 8) of them (the last block
  // partial), which never leave B2: no clip
  auto n = ne::var("n", 1, 40);
  auto A = te::placeholder(te::shape(n, 4), DType::int32(), "A");
  auto B = te::compute(
      te::shape(n, 4), [&](auto i, auto j) { return A(i, j) - 2; }, "B");
  auto B2 = te::compute(
      te::shape(n, 4), [&](auto i, auto j) { return A(i, j) * 5; }, "B2");
  auto C = te::compute(
      te::shape(n, 4),
      [&](auto i, auto j) { return te::select(ne::Expr(i) > 0, B(i - 1, j), B(i, j)) + B2(i, j); },
      "C");
  auto s = te::create_schedule(C);
  auto [io, ii] = s[C].split(s[C].axis(0), 8);
  s[B].compute_at(s[C], ii);
  s[B2].compute_at(s[C], io);
  auto f = te::lower(s, {A, C});
  const auto text = tir::to_string(f);
  CAPTURE(text);
  CHECK(text.find("max((i0.outer*8) + i0.inner - 1, 0)") != std::string::npos);
  CHECK(text.find("for (i0, 0, min(n - (i0.outer*8), 8)) {") != std::string::npos);
  for (std::int64_t t : {1, 7, 8, 13, 40}) {
    auto a = te::NDArray::random(DType::int32(), {t, 4}, static_cast<std::uint64_t>(t));
    te::NDArray c(DType::int32(), {t, 4});
    tir::run(f, {&a, &c}, {{"n", t}});
    CHECK(c == te::evaluate(C, {{A, a}}, {{"n", t}}));
  }
}

TEST_CASE("primitives: split_nparts names itself, and splits loops that can be empty") {
  auto n = ne::var("n", 1, 100);
  auto A = te::placeholder(te::shape(4, n), DType::int32(), "A");
  te::IterVar k;
  auto R = te::compute(
      te::shape(4),
      [&](auto i) {
        k = te::reduce_axis({0, n - 5}, "k");
        return te::sum(A(i, k), {k});
      },
      "R");
  auto s = te::create_schedule(R);
  // k runs n - 5 times, none for n <= 5: parts of size 1 then, and no part runs.
  auto [ko, ki] = s[R].split_nparts(k, 2);
  CHECK(fmt::format("{}", ki.dom().extent) == "max(floordiv(n, 2) - 2, 1)");
  auto f = te::lower(s, {A, R});
  for (std::int64_t v : {1, 5, 6, 7, 100}) {
    auto a = te::NDArray::random(DType::int32(), {4, v}, 4, -100, 100);
    te::NDArray r(DType::int32(), {4});
    tir::run(f, {&a, &r}, {{"n", v}});
    CHECK(r == te::evaluate(R, {{A, a}}, {{"n", v}}));
  }
  s[R].split_nparts(s[R].axis(0), 3);
  CHECK_THROWS_WITH_AS(s[R].split_nparts(s[R].axis(0), 2),
                       doctest::Contains("stage 'R': split_nparts of axis 'i0', which was already "
                                         "split or fused"),
                       ScheduleError);
  CHECK_THROWS_WITH_AS(s[A].split_nparts(s[R].axis(0), 2),
                       "stage 'A' is a placeholder: split_nparts applies to computed tensors",
                       ScheduleError);
  (void)ko;
}

TEST_CASE("primitives: split_nparts of a symbolic loop, twice, proves its part sizes >= 1") {
  auto n = ne::var("n", 1, 100);
  auto A = te::placeholder(te::shape(n), DType::int32(), "A");
  auto B = te::compute(
      te::shape(n), [&](auto i) { return A(i) + 1; }, "B");
  auto s = te::create_schedule(B);
  auto [o, i] = s[B].split_nparts(s[B].axis(0), 3);
  auto [oo, oi] = s[B].split_nparts(o, 2);
  for (std::int64_t v = 1; v <= 100; ++v) {
    const std::vector<ne::Binding> at{{"n", v}};
    // At most the parts asked for, none empty, and together they cover n.
    const auto parts = ne::eval(o.dom().extent, at), size = ne::eval(i.dom().extent, at);
    const auto parts2 = ne::eval(oo.dom().extent, at), size2 = ne::eval(oi.dom().extent, at);
    REQUIRE(parts >= 1);
    REQUIRE(parts <= 3);
    REQUIRE(size >= 1);
    REQUIRE(parts * size >= v);
    REQUIRE((parts - 1) * size < v);
    REQUIRE(parts2 >= 1);
    REQUIRE(parts2 <= 2);
    REQUIRE(size2 >= 1);
    REQUIRE(parts2 * size2 >= parts);
  }
  auto f = te::lower(s, {A, B});
  for (std::int64_t v : {1, 2, 3, 5, 37, 100}) {
    auto a = te::NDArray::random(DType::int32(), {v}, 9, -100, 100);
    te::NDArray b(DType::int32(), {v});
    tir::run(f, {&a, &b}, {{"n", v}});
    CHECK(b == te::evaluate(B, {{A, a}}, {{"n", v}}));
  }
}

TEST_CASE("primitives: compute_at at a loop that is not the parent's names the stage moved") {
  Chain g;
  auto E = te::compute(
      te::shape(12), [&](auto i) { return g.C(i) * 2; }, "E");
  auto s = te::create_schedule(E);
  CHECK_THROWS_WITH_AS(s[g.B].compute_at(s[g.C], s[E].axis(0)),
                       "stage 'B': compute_at stage 'C' at axis 'i0', which belongs to stage "
                       "'E'; pass one of the loops of 'C' (i0, k)",
                       ScheduleError);
  auto [o, i] = s[g.C].split(s[g.C].axis(0), 4);
  CHECK_THROWS_WITH_AS(s[g.B].compute_at(s[g.C], s[g.C].axis(0)),
                       "stage 'B': compute_at stage 'C' at axis 'i0', which was already split or "
                       "fused (loops: i0.outer, i0.inner, k)",
                       ScheduleError);
  CHECK_THROWS_WITH_AS(s[g.B].compute_at(s[g.C], te::IterVar()),
                       "stage 'B': compute_at stage 'C' at an undefined axis", ScheduleError);
  // The other primitives name their own stage, and now its loops.
  CHECK_THROWS_WITH_AS(s[g.C].split(s[E].axis(0), 2),
                       "stage 'C': split of axis 'i0', which belongs to stage 'E'; pass one of "
                       "the loops of 'C' (i0.outer, i0.inner, k)",
                       ScheduleError);
  s[g.B].compute_at(s[g.C], o);
  auto a = te::NDArray::random(DType::int32(), {12, 10}, 5, -100, 100);
  te::NDArray e(DType::int32(), {12});
  tir::run(te::lower(s, {g.A, E}), {&a, &e});
  CHECK(e == te::evaluate(E, {{g.A, a}}));
  (void)i;
}

TEST_CASE("primitives: fuse of three or more adjacent loops, as TVM's fuse(*args)") {
  auto A = te::placeholder(te::shape(3, 4, 5, 2), DType::int32(), "A");
  auto B = te::compute(
      te::shape(3, 4, 5, 2),
      [&](auto i, auto j, auto l, auto m) { return A(i, j, l, m) * 3 + te::index_value(m); }, "B");
  auto C = te::compute(
      te::shape(3, 4, 5, 2), [&](auto... i) { return B(i...) - 1; }, "C");
  auto s = te::create_schedule(C);
  auto a0 = s[C].axis(0), a1 = s[C].axis(1), a2 = s[C].axis(2), a3 = s[C].axis(3);
  // Everything is checked first: refused requests leave the loops as they were.
  CHECK_THROWS_WITH_AS(s[C].fuse(a0, a1, a3),
                       "stage 'C': fuse of 'i0' (loop 0), 'i1' (loop 1), 'i3' (loop 3): each axis "
                       "must be the loop directly inside the one before it (loops: i0, i1, i2, "
                       "i3)",
                       ScheduleError);
  CHECK_THROWS_WITH_AS(s[C].fuse({a1, a0, a2}),
                       "stage 'C': fuse of 'i1' (loop 1), 'i0' (loop 0), 'i2' (loop 2): each axis "
                       "must be the loop directly inside the one before it (loops: i0, i1, i2, "
                       "i3)",
                       ScheduleError);
  CHECK_THROWS_WITH_AS(s[C].fuse(std::vector<te::IterVar>{}),
                       "stage 'C': fuse of no axes; list the loops to fuse, outermost first",
                       ScheduleError);
  CHECK(leaf_names(s[C]) == std::vector<std::string>{"i0", "i1", "i2", "i3"});
  CHECK(s[C].fuse({a3}) == a3);
  // B computed per fused iteration of C: attached at i1, which the fuse then replaces.
  s[B].compute_at(s[C], a1);
  auto f3 = s[C].fuse(a0, a1, a2);
  CHECK(f3.dom().extent.as_int() == 60);
  CHECK(leaf_names(s[C]) == std::vector<std::string>{"i0.i1.fused.i2.fused", "i3"});
  auto [o, i] = s[C].split(f3, 7);  // 60 = 8 * 7 + 4: a partial last block
  auto fb = s[B].fuse({s[B].axis(0), s[B].axis(1), s[B].axis(2), s[B].axis(3)});
  CHECK(fb.name() == "i0.i1.fused.i2.fused.i3.fused");
  const auto f = te::lower(s, {A, C});
  auto a = te::NDArray::random(DType::int32(), {3, 4, 5, 2}, 31, -1000, 1000);
  te::NDArray c(DType::int32(), {3, 4, 5, 2});
  tir::run(f, {&a, &c});
  for (std::int64_t x = 0; x < 3; ++x)
    for (std::int64_t y = 0; y < 4; ++y)
      for (std::int64_t z = 0; z < 5; ++z)
        for (std::int64_t w = 0; w < 2; ++w)
          CHECK(c.at({x, y, z, w}) == a.at({x, y, z, w}) * 3 + w - 1);
  (void)o, (void)i;
  // Mixed kinds are refused by name, before any pair is fused.
  Chain g;
  auto s2 = te::create_schedule(g.C);
  auto [io, ii] = s2[g.C].split(s2[g.C].axis(0), 4);
  CHECK_THROWS_WITH_AS(s2[g.C].fuse(io, ii, g.k),
                       "stage 'C': fuse of data-parallel and reduction axes 'i0.inner' and 'k'",
                       ScheduleError);
  CHECK(leaf_names(s2[g.C]) == std::vector<std::string>{"i0.outer", "i0.inner", "k"});
}

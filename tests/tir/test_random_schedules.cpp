// Property tests: random legal schedules (splits and split_nparts with non-divisible factors,
// reorders, fuses, unrolls, compute_at, compute_inline, and splits or fuses of a loop after a
// producer was attached at it) lowered and interpreted must equal te::evaluate of the same
// tensors, for random inputs and random values of the symbolic dims. Scenarios cover
// reductions that do not start at 0, triangular reductions and symbolic dims.
#include <dlavm/schedule.hpp>
#include <dlavm/tir.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace te = dlavm::te;
namespace ne = dlavm::ne;
namespace tir = dlavm::tir;
using dlavm::DType;

namespace {

struct Scenario {
  std::vector<te::Tensor> inputs;
  te::Tensor output;
  std::vector<ne::Binding> bindings;
};

std::vector<std::int64_t> concrete_shape(const te::Tensor& t, const std::vector<ne::Binding>& b) {
  std::vector<std::int64_t> dims;
  for (const auto& d : t.shape()) dims.push_back(ne::eval(d, b));
  return dims;
}

int pick(std::mt19937& rng, int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); }
bool chance(std::mt19937& rng, double p) {
  return std::uniform_real_distribution<double>(0, 1)(rng) < p;
}

// Splits leaf `v` of stage by a random factor, or into a random number of parts.
void random_split(te::Stage& stage, const te::IterVar& v, std::mt19937& rng) {
  if (chance(rng, 0.3))
    stage.split_nparts(v, 1 + pick(rng, 4));
  else
    stage.split(v, 1 + pick(rng, 5));
}

// Applies random primitives to every computed stage, consumers first so that producers can
// attach to their final loops.
void randomize(te::Schedule& s, std::mt19937& rng) {
  const auto& stages = s.stages();
  for (auto it = stages.rbegin(); it != stages.rend(); ++it) {
    auto* node = it->get();
    if (node->is_placeholder()) continue;
    te::Stage stage(node, &s);
    // Where it is computed.
    std::vector<dlavm::schedule::StageNode*> readers;
    for (const auto& other : stages)
      if (!other->is_placeholder() && other->attach != dlavm::schedule::AttachKind::Inline &&
          other.get() != node)
        for (const auto& in : other->op->inputs)
          if (in == node->op) readers.push_back(other.get());
    const int choice = pick(rng, 3);
    if (choice == 0 && node->op->reduce_axis.empty() && !node->is_output) {
      stage.compute_inline();
      continue;
    }
    // Loops: split, reorder, fuse, unroll.
    for (int k = pick(rng, 3); k > 0; --k) {
      const auto& leaf = node->leaf;
      random_split(stage, leaf[static_cast<std::size_t>(pick(rng, static_cast<int>(leaf.size())))],
                   rng);
    }
    if (chance(rng, 0.7)) {
      auto order = node->leaf;
      std::shuffle(order.begin(), order.end(), rng);
      stage.reorder(order);
    }
    if (chance(rng, 0.3) && node->leaf.size() >= 2) {
      const auto k = static_cast<std::size_t>(pick(rng, static_cast<int>(node->leaf.size()) - 1));
      if (node->leaf[k].kind() == node->leaf[k + 1].kind())
        stage.fuse(node->leaf[k], node->leaf[k + 1]);
    }
    if (chance(rng, 0.2)) stage.unroll(node->leaf.back());
    // Attach at a loop of its only reader (or where that reader is attached).
    if (choice == 1 && readers.size() == 1 && !node->is_output) {
      auto* target = readers.front();
      te::IterVar ivar;
      if (target->attach == dlavm::schedule::AttachKind::At && chance(rng, 0.5)) {
        ivar = target->attach_ivar;
        target = target->attach_stage;
      } else {
        ivar =
            target
                ->leaf[static_cast<std::size_t>(pick(rng, static_cast<int>(target->leaf.size())))];
      }
      stage.compute_at(te::Stage(target, &s), ivar);
    }
  }
}

// After producers are attached: splits or fuses the loops they are attached at (the
// producers must follow to the loops those become), then maybe reorders again.
void reshape_attach_loops(te::Schedule& s, std::mt19937& rng) {
  for (const auto& st : s.stages()) {
    if (st->attach != dlavm::schedule::AttachKind::At || !chance(rng, 0.8)) continue;
    auto* parent = st->attach_stage;
    te::Stage stage(parent, &s);
    const auto& leaf = parent->leaf;
    const auto pos = static_cast<std::size_t>(std::find(leaf.begin(), leaf.end(), st->attach_ivar) -
                                              leaf.begin());
    REQUIRE(pos < leaf.size());
    const bool can_fuse_next = pos + 1 < leaf.size() && leaf[pos].kind() == leaf[pos + 1].kind();
    const bool can_fuse_prev = pos > 0 && leaf[pos - 1].kind() == leaf[pos].kind();
    const int what = pick(rng, 3);
    if (what == 1 && can_fuse_next)
      stage.fuse(leaf[pos], leaf[pos + 1]);
    else if (what == 2 && can_fuse_prev)
      stage.fuse(leaf[pos - 1], leaf[pos]);
    else
      random_split(stage, leaf[pos], rng);
    if (chance(rng, 0.3)) {
      auto order = parent->leaf;
      std::shuffle(order.begin(), order.end(), rng);
      stage.reorder(order);
    }
  }
}

// Refusals that are by design: a reader outside the attach scope, and a loop whose extent
// depends on a loop inside it (a triangular reduction reordered outside its axis). Anything
// else is a bug.
bool refused_by_design(const std::string& what) {
  return what.find("reads it outside that loop") != std::string::npos ||
         what.find("inside it; reorder so that") != std::string::npos;
}

struct Checks {
  int count = 0;
  std::uint64_t seed = 0;
  bool reshape = false;  // split/fuse attach loops after compute_at
  double min_lowered = 0.75;
};

void check_random_schedules(const std::function<Scenario()>& make, const Checks& c) {
  int lowered = 0;
  for (int n = 0; n < c.count; ++n) {
    std::mt19937 rng(static_cast<unsigned>(c.seed + static_cast<std::uint64_t>(n)));
    Scenario sc = make();
    auto s = te::create_schedule(sc.output);
    randomize(s, rng);
    if (c.reshape) reshape_attach_loops(s, rng);
    std::vector<te::Tensor> args = sc.inputs;
    args.push_back(sc.output);
    tir::PrimFunc f;
    try {
      f = te::lower(s, args, "random");
    } catch (const dlavm::ScheduleError& e) {
      REQUIRE_MESSAGE(refused_by_design(e.what()), std::string(e.what()));
      continue;
    }
    std::vector<te::NDArray> arrays;
    std::vector<te::TensorBinding> bound;
    for (std::size_t k = 0; k < sc.inputs.size(); ++k)
      arrays.push_back(te::NDArray::random(sc.inputs[k].dtype(),
                                           concrete_shape(sc.inputs[k], sc.bindings),
                                           c.seed * 31 + static_cast<std::uint64_t>(n * 7 + k)));
    for (std::size_t k = 0; k < sc.inputs.size(); ++k) bound.emplace_back(sc.inputs[k], arrays[k]);
    const auto expected = te::evaluate(sc.output, bound, sc.bindings);
    te::NDArray out(sc.output.dtype(), concrete_shape(sc.output, sc.bindings));
    std::vector<te::NDArray*> ptrs;
    for (auto& a : arrays) ptrs.push_back(&a);
    ptrs.push_back(&out);
    tir::run(f, ptrs, sc.bindings);
    const std::string text = tir::to_string(f);
    INFO("schedule #", n, ":\n", text);
    CHECK(out == expected);
    ++lowered;
  }
  // Most random schedules are legal; refusals must stay the exception.
  CHECK(lowered >= c.min_lowered * c.count);
}

void check_random_schedules(const std::function<Scenario()>& make, int count, std::uint64_t seed) {
  check_random_schedules(make, Checks{count, seed});
}

}  // namespace

TEST_CASE("random schedules: elementwise chain over a symbolic token dim") {
  auto token = ne::var("token", 1, 12);
  for (std::int64_t t : {1, 5, 12}) {
    check_random_schedules(
        [&] {
          auto A = te::placeholder(te::shape(token, 6), DType::int32(), "A");
          auto B = te::compute(
              te::shape(token, 6), [&](auto i, auto j) { return A(i, j) * 3 + 1; }, "B");
          auto C = te::compute(
              te::shape(token, 6), [&](auto i, auto j) { return te::max(B(i, j), A(i, j)) >> 1; },
              "C");
          auto D = te::compute(
              te::shape(token, 6), [&](auto i, auto j) { return C(i, j) + B(i, j); }, "D");
          return Scenario{{A}, D, {{"token", t}}};
        },
        40, static_cast<std::uint64_t>(100 + t));
  }
}

namespace {
// C = A_buf x B_buf^T over a reduction of 9, through copies that can be attached.
Scenario gemm_scenario() {
  auto A = te::placeholder(te::shape(7, 9), DType::int8(), "A");
  auto B = te::placeholder(te::shape(5, 9), DType::int8(), "B");
  auto A_buf = te::compute(
      te::shape(7, 9), [&](auto i, auto k) { return A(i, k); }, "A_buf");
  auto B_buf = te::compute(
      te::shape(5, 9), [&](auto j, auto k) { return B(j, k); }, "B_buf");
  auto k = te::reduce_axis({0, 9}, "k");
  auto C = te::compute(
      te::shape(7, 5),
      [&](auto i, auto j) {
        return te::sum(
            te::cast(DType::int32(), A_buf(i, k)) * te::cast(DType::int32(), B_buf(j, k)), {k});
      },
      "C");
  return Scenario{{A, B}, C, {}};
}
}  // namespace

TEST_CASE("random schedules: GEMM with on-chip copies, odd sizes") {
  check_random_schedules(gemm_scenario, 120, 7);
}

TEST_CASE("random schedules: conv2d with padding 1 and stride 2, then ReLU") {
  check_random_schedules(
      [] {
        auto X = te::placeholder(te::shape(1, 3, 7, 6), DType::int8(), "X");
        auto W = te::placeholder(te::shape(4, 3, 3, 3), DType::int8(), "W");
        auto P = te::compute(
            te::shape(1, 3, 9, 8),
            [&](auto n, auto c, auto y, auto x) {
              return te::select(y >= 1 && y < 8 && x >= 1 && x < 7, X(n, c, y - 1, x - 1), 0);
            },
            "P");
        auto c = te::reduce_axis({0, 3}, "c");
        auto ky = te::reduce_axis({0, 3}, "ky");
        auto kx = te::reduce_axis({0, 3}, "kx");
        auto conv = te::compute(
            te::shape(1, 4, 4, 3),
            [&](auto n, auto f, auto y, auto x) {
              return te::sum(te::cast(DType::int32(), P(n, c, y * 2 + ky, x * 2 + kx)) *
                                 te::cast(DType::int32(), W(f, c, ky, kx)),
                             {c, ky, kx});
            },
            "conv");
        auto relu = te::compute(
            te::shape(1, 4, 4, 3), [&](auto... i) { return te::max(conv(i...), 0); }, "relu");
        return Scenario{{X, W}, relu, {}};
      },
      80, 11);
}

namespace {
// R(i, j) = sum over k1 in [3, 8), k2 in [n, n + 3) and k3 in [2, 3) of
// A_buf(i, floordiv(k1, 4) + floormod(k1, 4)*2 + k2 + k3) * B_buf(j, k1): reductions that
// start at a constant, at a symbolic offset, and one of extent 1 (whose variable's range is
// the single value 2).
Scenario offset_reduction_scenario(std::int64_t n_value) {
  auto n = ne::var("n", 1, 6);
  auto A = te::placeholder(te::shape(5, n + 12), DType::int32(), "A");
  auto B = te::placeholder(te::shape(4, 8), DType::int32(), "B");
  auto A_buf = te::compute(
      te::shape(5, n + 12), [&](auto i, auto k) { return A(i, k); }, "A_buf");
  auto B_buf = te::compute(
      te::shape(4, 8), [&](auto j, auto k) { return B(j, k); }, "B_buf");
  auto k1 = te::reduce_axis({3, 8}, "k1");
  auto k2 = te::reduce_axis({n, n + 3}, "k2");
  auto k3 = te::reduce_axis({2, 3}, "k3");
  auto R = te::compute(
      te::shape(5, 4),
      [&](auto i, auto j) {
        const auto column = ne::floordiv(k1, 4) + ne::floormod(k1, 4) * 2 + k2.var() + k3.var();
        return te::sum(A_buf(i, column) * B_buf(j, k1), {k1, k2, k3});
      },
      "R");
  return Scenario{{A, B}, R, {{"n", n_value}}};
}

// Lower-triangular products R(i, j) = sum over k < i + 1 of A_buf(i, k) * B_buf(k, j), or
// suffix sums over k in [i, 7): reductions whose range depends on a data-parallel axis.
Scenario triangular_scenario(bool suffix) {
  auto A = te::placeholder(te::shape(7, 7), DType::int32(), "A");
  auto B = te::placeholder(te::shape(7, 5), DType::int32(), "B");
  auto A_buf = te::compute(
      te::shape(7, 7), [&](auto i, auto k) { return A(i, k) - 1; }, "A_buf");
  auto B_buf = te::compute(
      te::shape(7, 5), [&](auto k, auto j) { return B(k, j) * 2; }, "B_buf");
  auto R = te::compute(
      te::shape(7, 5),
      [&](auto i, auto j) {
        auto k = suffix ? te::reduce_axis({i, 7}, "k") : te::reduce_axis({0, i + 1}, "k");
        return te::sum(A_buf(i, k) * B_buf(k, j), {k});
      },
      "R");
  return Scenario{{A, B}, R, {}};
}

// Symbolic rows and columns, a reversed read over the symbolic dim, then a row sum.
Scenario symbolic_scenario(std::int64_t rows, std::int64_t cols) {
  auto n = ne::var("n", 1, 9);
  auto m = ne::var("m", 1, 7);
  auto A = te::placeholder(te::shape(n, m), DType::int32(), "A");
  auto B = te::compute(
      te::shape(n, m), [&](auto i, auto j) { return A(i, j) * 2 + 1; }, "B");
  auto C = te::compute(
      te::shape(n, m), [&](auto i, auto j) { return B(n - 1 - i, j) - A(i, j); }, "C");
  auto k = te::reduce_axis({0, m}, "k");
  auto D = te::compute(
      te::shape(n), [&](auto i) { return te::sum(C(i, k), {k}); }, "D");
  return Scenario{{A}, D, {{"n", rows}, {"m", cols}}};
}
}  // namespace

TEST_CASE("random schedules: reductions that start at nonzero offsets") {
  for (std::int64_t n : {1, 4, 6})
    check_random_schedules([n] { return offset_reduction_scenario(n); },
                           Checks{100, static_cast<std::uint64_t>(300 + n), true});
}

TEST_CASE("random schedules: triangular reductions") {
  // A reduction loop reordered outside the loops of the axis its range names is refused, so
  // fewer of these schedules lower.
  check_random_schedules([] { return triangular_scenario(false); }, Checks{200, 400, true, 0.3});
  check_random_schedules([] { return triangular_scenario(true); }, Checks{200, 500, true, 0.3});
}

TEST_CASE("random schedules: symbolic dims, split_nparts, a reversed read") {
  for (auto [rows, cols] : {std::pair<std::int64_t, std::int64_t>{1, 1}, {5, 3}, {9, 7}})
    check_random_schedules([rows = rows, cols = cols] { return symbolic_scenario(rows, cols); },
                           Checks{80, static_cast<std::uint64_t>(600 + rows * 10 + cols), true});
}

TEST_CASE("random schedules: loops split and fused after producers are attached at them") {
  check_random_schedules(gemm_scenario, Checks{120, 700, true});
  check_random_schedules(
      [] {
        auto A = te::placeholder(te::shape(6, 10), DType::int32(), "A");
        auto B = te::compute(
            te::shape(6, 10), [&](auto i, auto j) { return A(i, j) + 1; }, "B");
        auto C = te::compute(
            te::shape(6, 10), [&](auto i, auto j) { return B(i, j) * 2 - A(i, 9 - j); }, "C");
        return Scenario{{A}, C, {}};
      },
      Checks{120, 800, true});
}

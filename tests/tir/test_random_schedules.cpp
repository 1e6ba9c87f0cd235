// Property tests: random legal schedules (splits with non-divisible factors, reorders, fuses,
// unrolls, compute_at, compute_inline) lowered and interpreted must equal te::evaluate of the
// same tensors, for random inputs and random values of the symbolic dims.
#include <dlavm/schedule.hpp>
#include <dlavm/tir.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <random>

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
      stage.split(leaf[static_cast<std::size_t>(pick(rng, static_cast<int>(leaf.size())))],
                  1 + pick(rng, 5));
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

void check_random_schedules(const std::function<Scenario()>& make, int count, std::uint64_t seed) {
  int lowered = 0;
  for (int n = 0; n < count; ++n) {
    std::mt19937 rng(static_cast<unsigned>(seed + static_cast<std::uint64_t>(n)));
    Scenario sc = make();
    auto s = te::create_schedule(sc.output);
    randomize(s, rng);
    std::vector<te::Tensor> args = sc.inputs;
    args.push_back(sc.output);
    tir::PrimFunc f;
    try {
      f = te::lower(s, args, "random");
    } catch (const dlavm::ScheduleError& e) {
      // A reader outside the attach scope is refused by design; everything else is a bug.
      REQUIRE_MESSAGE(std::string(e.what()).find("reads it outside that loop") != std::string::npos,
                      e.what());
      continue;
    }
    std::vector<te::NDArray> arrays;
    std::vector<te::TensorBinding> bound;
    for (std::size_t k = 0; k < sc.inputs.size(); ++k)
      arrays.push_back(te::NDArray::random(sc.inputs[k].dtype(),
                                           concrete_shape(sc.inputs[k], sc.bindings),
                                           seed * 31 + static_cast<std::uint64_t>(n * 7 + k)));
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
  CHECK(lowered * 4 >= count * 3);
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

TEST_CASE("random schedules: GEMM with on-chip copies, odd sizes") {
  check_random_schedules(
      [] {
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
                  te::cast(DType::int32(), A_buf(i, k)) * te::cast(DType::int32(), B_buf(j, k)),
                  {k});
            },
            "C");
        return Scenario{{A, B}, C, {}};
      },
      120, 7);
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

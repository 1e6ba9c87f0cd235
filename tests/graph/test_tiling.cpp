// The tiling search's helpers (graph/strategy/tiling.hpp) against plain loops: the divisors of
// n by trial division, the combinations against nested loops, least_cost against a scan.
#include <dlavm/graph/strategy/tiling.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <optional>
#include <random>
#include <vector>

namespace graph = dlavm::graph;

namespace {

struct Knobs {
  std::int64_t a, b, c;
  bool operator==(const Knobs&) const = default;
};

}  // namespace

TEST_CASE("tiling: divisors are every d dividing n, ascending") {
  for (std::int64_t n = 1; n <= 300; ++n) {
    std::vector<std::int64_t> want;
    for (std::int64_t d = 1; d <= n; ++d)
      if (n % d == 0) want.push_back(d);
    CAPTURE(n);
    CHECK(graph::divisors(n) == want);
  }
}

TEST_CASE("tiling: combinations enumerate the product, the last list fastest") {
  const std::vector<std::int64_t> as{1, 2, 7}, bs{4}, cs{2, 1};
  std::vector<Knobs> want;
  for (auto a : as)
    for (auto b : bs)
      for (auto c : cs) want.push_back({a, b, c});
  std::vector<Knobs> got;
  for (const Knobs k : graph::combinations<Knobs>(as, bs, cs)) got.push_back(k);
  CHECK(got == want);
  const std::vector<std::int64_t> none;
  CHECK(graph::combinations<Knobs>(as, none, cs).empty());
}

TEST_CASE("tiling: least_cost is the first cheapest candidate that fits, as a scan finds it") {
  std::mt19937 rng(7);
  std::uniform_int_distribution<std::int64_t> value(1, 6);
  for (int trial = 0; trial < 200; ++trial) {
    const auto as = graph::divisors(value(rng) * 2), bs = graph::divisors(value(rng)),
               cs = graph::divisors(value(rng) + 3);
    const std::int64_t limit = value(rng) * 4;
    const auto fits = [&](const Knobs& k) { return k.a * k.b <= limit; };
    // Few distinct costs, so that ties are common and the first of equals matters.
    const auto cost = [](const Knobs& k) { return static_cast<double>((k.a + 2 * k.b + k.c) % 5); };
    std::optional<Knobs> want;
    for (auto a : as)
      for (auto b : bs)
        for (auto c : cs) {
          const Knobs k{a, b, c};
          if (fits(k) && (!want || cost(k) < cost(*want))) want = k;
        }
    CAPTURE(trial);
    CHECK(graph::least_cost(graph::combinations<Knobs>(as, bs, cs), fits, cost) == want);
  }
  const std::vector<std::int64_t> one{1};
  CHECK(!graph::least_cost(
      graph::combinations<Knobs>(one, one, one), [](const Knobs&) { return false; },
      [](const Knobs&) { return 0.0; }));
}

// ne::simplify on large affine sums (issue target: at least one million nodes a second for a
// 1,000-term sum), plus the pieces later passes lean on: bounds and linear_form.
#include <dlavm/ne.hpp>

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ne = dlavm::ne;

namespace {

std::int64_t count_nodes(const ne::Expr& e) {
  struct Count : ne::ExprVisitor<Count> {
    std::int64_t n = 0;
    void visit_int(const ne::IntImmNode&, const ne::Expr&) { ++n; }
    void visit_var(const ne::VarNode&, const ne::Expr&) { ++n; }
    void visit_binary(const ne::BinaryNode& b, const ne::Expr& e) {
      ++n;
      ExprVisitor::visit_binary(b, e);
    }
  } count;
  count.visit(e);
  return count.n;
}

// sum over k < terms of v[k % num_vars] * (k % 7 - 3) + k, written as a left-leaning chain of
// additions (the shape a loop of `+=` builds): about 5 nodes per term.
ne::Expr affine_sum(int terms, int num_vars) {
  std::vector<ne::Var> vars;
  for (int v = 0; v < num_vars; ++v) vars.push_back(ne::var(fmt::format("v{}", v), 0, 1000));
  ne::Expr sum = 0;
  for (int k = 0; k < terms; ++k) {
    const auto& v = vars[static_cast<std::size_t>(k % num_vars)];
    sum = sum + (v * (k % 7 - 3) + k);
  }
  return sum;
}

void simplify_affine(benchmark::State& state, int num_vars) {
  const ne::Expr e = affine_sum(static_cast<int>(state.range(0)), num_vars);
  const std::int64_t nodes = count_nodes(e);
  for (auto _ : state) benchmark::DoNotOptimize(ne::simplify(e));
  state.counters["nodes"] = static_cast<double>(nodes);
  state.counters["nodes/s"] =
      benchmark::Counter(static_cast<double>(nodes), benchmark::Counter::kIsIterationInvariantRate);
}

// 1,000 terms over 1,000 distinct variables: sorting dominates.
void BM_SimplifyAffine_DistinctVars(benchmark::State& state) {
  simplify_affine(state, static_cast<int>(state.range(0)));
}
BENCHMARK(BM_SimplifyAffine_DistinctVars)->Arg(1000)->Arg(10000)->Unit(benchmark::kMicrosecond);

// 1,000 terms over 16 variables: merging terms of the same variable.
void BM_SimplifyAffine_16Vars(benchmark::State& state) { simplify_affine(state, 16); }
BENCHMARK(BM_SimplifyAffine_16Vars)->Arg(1000)->Unit(benchmark::kMicrosecond);

// A split/fuse index as lowering produces it: floordiv/floormod with bounds and divisibility.
void BM_SimplifySplitIndex(benchmark::State& state) {
  auto token = ne::var("token", 1, 2048);
  auto io = ne::var("io", 0, 127);
  auto ii = ne::var("ii", 0, 15);
  auto j = ne::var("j", 0, 63);
  const ne::Expr fused = io * 16 + ii;
  const ne::Expr e = (ne::floordiv(fused, 16) * 16 + ne::floormod(fused, 16)) * token * 64 +
                     ne::floordiv(j * 4 + 3, 4) * 16 + ne::floormod(ii * 64 + j, 64);
  const std::int64_t nodes = count_nodes(e);
  for (auto _ : state) benchmark::DoNotOptimize(ne::simplify(e));
  state.counters["nodes"] = static_cast<double>(nodes);
  state.counters["nodes/s"] =
      benchmark::Counter(static_cast<double>(nodes), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_SimplifySplitIndex)->Unit(benchmark::kMicrosecond);

void BM_Bounds_1000Terms(benchmark::State& state) {
  const ne::Expr e = affine_sum(1000, 16);
  for (auto _ : state) benchmark::DoNotOptimize(ne::bounds(e));
}
BENCHMARK(BM_Bounds_1000Terms)->Unit(benchmark::kMicrosecond);

void BM_LinearForm_1000Terms(benchmark::State& state) {
  std::vector<ne::Var> vars;
  for (int v = 0; v < 16; ++v) vars.push_back(ne::var(fmt::format("w{}", v), 0, 1000));
  ne::Expr sum = 0;
  for (int k = 0; k < 1000; ++k) sum = sum + vars[static_cast<std::size_t>(k % 16)] * (k % 5 + 1);
  for (auto _ : state) benchmark::DoNotOptimize(ne::linear_form(sum, vars));
}
BENCHMARK(BM_LinearForm_1000Terms)->Unit(benchmark::kMicrosecond);

}  // namespace

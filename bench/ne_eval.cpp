// Evaluating a 20-node symbolic expression at run time (issue target: under 20 ns a call with
// ne::compile), against the tree-walking ne::eval.
#include <dlavm/ne.hpp>

#include <benchmark/benchmark.h>

#include <array>
#include <cstdint>

namespace ne = dlavm::ne;

namespace {

struct Fixture {
  ne::Var token = ne::var("token", 1, 2048);
  ne::Var batch = ne::var("batch", 1, 8);
  // A buffer offset of the kind an instantiated program computes: 20 nodes as written, and
  // still 20 after simplification (it is already canonical).
  ne::Expr expr = ne::floordiv(token + 15, 16) * 4096 + ne::min(token, 512) * batch +
                  ne::select(token < 128, batch, 3);
};

std::int64_t count_nodes(const ne::Expr& e) {
  struct Count : ne::ExprVisitor<Count> {
    std::int64_t n = 0;
    void visit_int(const ne::IntImmNode&, const ne::Expr&) { ++n; }
    void visit_var(const ne::VarNode&, const ne::Expr&) { ++n; }
    void visit_binary(const ne::BinaryNode& b, const ne::Expr& e) {
      ++n;
      ExprVisitor::visit_binary(b, e);
    }
    void visit_select(const ne::SelectNode& s, const ne::Expr& e) {
      ++n;
      ExprVisitor::visit_select(s, e);
    }
  } count;
  count.visit(e);
  return count.n;
}

void BM_CompiledEval_20Nodes(benchmark::State& state) {
  Fixture fx;
  const auto f = ne::compile(fx.expr, {fx.token, fx.batch});
  std::array<std::int64_t, 2> args{37, 2};
  std::int64_t sum = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(args);
    sum += f(args);
    args[0] = (args[0] & 1023) + 1;  // vary the input
  }
  benchmark::DoNotOptimize(sum);
  state.counters["nodes"] = static_cast<double>(count_nodes(f.expr()));
  state.counters["instructions"] = static_cast<double>(f.num_instructions());
}
BENCHMARK(BM_CompiledEval_20Nodes);

// The same expression hand-written in C++ with the same checks (ranges, overflow), as a floor
// for what an interpreter can reach.
void BM_NativeBaseline_20Nodes(benchmark::State& state) {
  std::array<std::int64_t, 2> args{37, 2};
  std::int64_t sum = 0;
  auto f = [](std::int64_t token, std::int64_t batch) {
    if (token < 1 || token > 2048 || batch < 1 || batch > 8) throw dlavm::ValueError("range");
    std::int64_t t = 0;
    std::int64_t u = 0;
    std::int64_t v = 0;
    if (__builtin_add_overflow(token, 15, &t)) throw dlavm::ArithmeticError("overflow");
    if (__builtin_mul_overflow(dlavm::ne::detail::floor_div(t, 16), 4096, &t))
      throw dlavm::ArithmeticError("overflow");
    if (__builtin_mul_overflow(token < 512 ? token : 512, batch, &u))
      throw dlavm::ArithmeticError("overflow");
    if (__builtin_add_overflow(t, u, &v)) throw dlavm::ArithmeticError("overflow");
    if (__builtin_add_overflow(v, token < 128 ? batch : 3, &v))
      throw dlavm::ArithmeticError("overflow");
    return v;
  };
  for (auto _ : state) {
    benchmark::DoNotOptimize(args);
    sum += f(args[0], args[1]);
    args[0] = (args[0] & 1023) + 1;
  }
  benchmark::DoNotOptimize(sum);
}
BENCHMARK(BM_NativeBaseline_20Nodes);

void BM_TreeEval_20Nodes(benchmark::State& state) {
  Fixture fx;
  const ne::Expr e = ne::simplify(fx.expr);
  std::int64_t token = 37;
  std::int64_t sum = 0;
  for (auto _ : state) {
    sum += ne::eval(e, {{"token", token}, {"batch", 2}});
    token = (token & 1023) + 1;
  }
  benchmark::DoNotOptimize(sum);
  state.counters["nodes"] = static_cast<double>(count_nodes(e));
}
BENCHMARK(BM_TreeEval_20Nodes);

void BM_Compile_20Nodes(benchmark::State& state) {
  Fixture fx;
  for (auto _ : state) benchmark::DoNotOptimize(ne::compile(fx.expr, {fx.token, fx.batch}));
}
BENCHMARK(BM_Compile_20Nodes);

}  // namespace

#include <dlavm/dlavm.hpp>
#include <cstdio>
#include <random>
namespace graph = dlavm::graph; namespace host = dlavm::host; namespace ne = dlavm::ne;
namespace te = dlavm::te; namespace vta = dlavm::vta; using dlavm::DType;
int main() {
  const vta::Env env;
  std::mt19937_64 rng(31);
  auto pick = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng); };
  std::uint64_t seed = 300; int bad = 0, runs = 0;
  for (int trial = 0; trial < 24; ++trial)
  for (auto part : {graph::IntegerSoftmaxPart::Exp, graph::IntegerSoftmaxPart::Normalize}) {
    const std::int64_t lanes = pick(1, 8), groups = trial % 3 == 0 ? 1 : pick(2, 16 / lanes), batches = pick(1, 2);
    const std::int64_t chunk = std::int64_t{1} << pick(1, 4);
    const bool causal = trial % 4 != 3;
    const auto m = ne::var("m", 1, 11); const auto last = ne::var("last", 0, 40);
    const graph::IntegerSoftmaxShape shape{.products = ne::simplify(batches * ne::ceildiv(m, groups)),
        .keys = ne::Expr(last) + m, .lanes = lanes, .queries = causal ? ne::Expr(m) : 0,
        .fixed = host::integer_exp_for(0.25), .groups = groups, .part = part};
    const graph::IntegerSoftmaxKernel kernel(env, shape, chunk, "sm");
    auto s = kernel.schedule();
    auto rewrite = kernel.skip_masked_work(s);
    graph::VtaKernel declared{std::move(s), kernel.args(), "", 0, 0, rewrite, kernel.constants()};
    const vta::Program prog(env, graph::lower_kernel(declared, env, "sm"));
    vta::SimDevice dev(env.config);
    graph::Layout layout{graph::Layout::Kind::BatchedMatrix, 1, 16}; layout.groups = groups;
    for (int k = 0; k < 3; ++k) {
      const std::int64_t q = pick(1, 11), l = pick(0, 40), n = q + l;
      const host::IntegerSoftmaxParams p{.axis = -2, .scale = 0.25, .causal = causal, .queries = host::CausalQueries::Before};
      auto logical = te::NDArray::random(DType::int8(), {batches, q, n, lanes}, seed++);
      if (part == graph::IntegerSoftmaxPart::Normalize && k < 2) logical = host::integer_softmax_exp(logical, p);
      auto a = graph::pack(logical, layout);
      te::NDArray r(DType::int8(), a.shape());
      std::vector<te::NDArray*> arrays{&a};
      auto constants = kernel.constants();
      for (auto& c : constants) arrays.push_back(&c);
      arrays.push_back(&r);
      const ne::Binding bindings[] = {{"m", q}, {"last", l}};
      if (!prog.run(dev, arrays, bindings).result.finished) { std::puts("unfinished"); ++bad; }
      const auto want = part == graph::IntegerSoftmaxPart::Exp ? host::integer_softmax_exp(logical, p) : host::integer_softmax_normalize(logical, p);
      if (!(graph::unpack(r, layout, logical.shape()) == want)) { ++bad; std::printf("MISMATCH part %d trial %d lanes %ld groups %ld batches %ld chunk %ld causal %d q %ld l %ld\n", int(part), trial, lanes, groups, batches, chunk, causal, q, l); }
      ++runs;
    }
  }
  std::printf("runs %d bad %d\n", runs, bad);
}

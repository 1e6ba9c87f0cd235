// Program::reinstantiate against Program::instantiate: a stream rewritten in place for new
// dims is the stream written anew, word for word, or it is refused and left as it was.
#include <dlavm/dlavm.hpp>

#include <doctest/doctest.h>

#include "../deploy/cases.hpp"
#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <vector>

namespace reinstantiate_tests {

namespace ne = dlavm::ne;
namespace vta = dlavm::vta;

std::vector<ne::Binding> bindings_of(const deploy_cases::Case& c,
                                     const std::vector<std::int64_t>& v) {
  std::vector<ne::Binding> b;
  for (std::size_t k = 0; k < c.dims.size(); ++k) b.push_back({c.dims[k], v[k]});
  return b;
}

std::optional<vta::Stream> fresh(const vta::Program& p, std::span<const ne::Binding> b,
                                 std::span<const std::uint64_t> phys) {
  try {
    return p.instantiate(b, phys);
  } catch (const dlavm::Error&) {
    return std::nullopt;
  }
}

// From dims `from` to `to`: rewritten where reinstantiate accepts, the same words as a fresh
// instantiation; refused, unchanged. Returns whether it rewrote.
bool check_pair(const vta::Program& p, std::span<const ne::Binding> from,
                std::span<const ne::Binding> to, std::span<const std::uint64_t> phys) {
  vta::StreamTape tape;
  vta::Stream stream;
  try {
    stream = p.instantiate(from, phys, tape);
  } catch (const dlavm::Error&) {
    return false;  // (both refuse `from`)
  }
  CHECK(tape.valid);
  const auto before = stream;
  const auto want = fresh(p, to, phys);
  if (p.reinstantiate(stream, tape, to)) {
    REQUIRE(want.has_value());
    CHECK(stream.insns == want->insns);
    CHECK(stream.uops == want->uops);
    CHECK(stream.uop_relocs == want->uop_relocs);
    return true;
  }
  CHECK(stream.insns == before.insns);
  CHECK(stream.uops == before.uops);
  return false;
}

// The chunked integer softmax of a causal attention (graph::IntegerSoftmaxKernel) over
// `products` queries after `last` keys, in chunks of 16 keys: its kernels read no dims, its
// transfers and the passes' chunk counts do.
deploy_cases::Case softmax_case() {
  namespace graph = dlavm::graph;
  const vta::Env env;
  const auto products = ne::var("products", 1, 4);
  const auto last = ne::var("last", 0, 120);
  const graph::IntegerSoftmaxShape shape{.products = products,
                                         .keys = ne::Expr(last) + products,
                                         .lanes = 16,
                                         .queries = products,
                                         .fixed = dlavm::host::integer_exp_for(0.125)};
  const graph::IntegerSoftmaxKernel kernel(env, shape, 16, "sm");
  auto s = kernel.schedule();
  return {"softmax",
          std::make_shared<vta::Program>(vta::build(s, kernel.args(), env, "sm")),
          {"products", "last"},
          deploy_cases::grid({1, 0}, {4, 120}, {1, 1})};
}

TEST_CASE("property: reinstantiate writes instantiate's words, or refuses and changes nothing") {
  // the deploy cases (the MLP's dense layers over a symbolic batch, a convolution and a pool
  // over symbolic batch, height and width, a strided convolution over its height) and a
  // causal integer softmax; pairs of neighbouring dim values (a dim one further) and random
  // ones
  std::mt19937_64 rng(44);
  std::size_t rewritten = 0, refused = 0, softmax_rewritten = 0;
  auto cases = deploy_cases::cases();
  cases.push_back(softmax_case());
  for (const auto& c : cases) {
    CAPTURE(c.name);
    const auto& p = *c.program;
    std::vector<std::uint64_t> phys;
    for (std::size_t k = 0; k < p.func().params.size(); ++k)
      phys.push_back(deploy_cases::param_phys(k));
    std::uniform_int_distribution<std::size_t> pick(0, c.values.size() - 1);
    const int pairs = DLAVM_TEST_SANITIZED ? 8 : 40;
    for (int i = 0; i < 2 * pairs; ++i) {
      const auto from = c.values[pick(rng)];
      auto to = c.values[pick(rng)];
      if (i < pairs) {  // a neighbour: one dim one step on
        to = from;
        to[static_cast<std::size_t>(i) % to.size()] += 1;
      }
      CAPTURE(from);
      CAPTURE(to);
      const auto a = bindings_of(c, from), b = bindings_of(c, to);
      try {
        const bool done = check_pair(p, a, b, phys);
        (done ? rewritten : refused) += 1;
        softmax_rewritten += done && c.name == "softmax";
      } catch (const dlavm::ValueError&) {
        ++refused;  // `to` outside a dim's range: reinstantiate raises as instantiate does
        CHECK_THROWS_AS(p.instantiate(b, phys), dlavm::ValueError);
      }
    }
  }
  MESSAGE(rewritten, " rewritten (", softmax_rewritten, " of the softmax's), ", refused,
          " refused");
  // the softmax's neighbours in `last` keep its chunk counts in 15 of 16
  CHECK(softmax_rewritten * 4 >= static_cast<std::size_t>(DLAVM_TEST_SANITIZED ? 8 : 40));
  CHECK(refused > 0);
}

TEST_CASE("reinstantiate: a tape of no stream, of other dims or other addresses is refused") {
  const auto cases = deploy_cases::cases();
  const auto& c = cases.front();
  const auto& p = *c.program;
  std::vector<std::uint64_t> phys;
  for (std::size_t k = 0; k < p.func().params.size(); ++k)
    phys.push_back(deploy_cases::param_phys(k));
  const auto a = bindings_of(c, c.values.front());
  const auto b = bindings_of(c, c.values.back());
  vta::StreamTape tape;
  auto stream = p.instantiate(a, phys, tape);
  REQUIRE(tape.valid);
  const auto before = stream;
  // an empty tape (never written), one for another program's dims
  CHECK_FALSE(p.reinstantiate(stream, vta::StreamTape{}, b));
  auto other = tape;
  other.dims.push_back(1);
  CHECK_FALSE(p.reinstantiate(stream, other, b));
  other = tape;
  other.phys.pop_back();
  CHECK_FALSE(p.reinstantiate(stream, other, b));
  CHECK(stream.insns == before.insns);
  // the same dims: nothing to change, accepted
  CHECK(p.reinstantiate(stream, tape, a));
  CHECK(stream.insns == before.insns);
  // a dim out of its range: the error instantiate raises
  const std::vector<ne::Binding> outside{{c.dims.front(), 100000}};
  CHECK_THROWS_AS(p.reinstantiate(stream, tape, outside), dlavm::ValueError);
}

}  // namespace reinstantiate_tests

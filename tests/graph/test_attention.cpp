// The gallery's attention block (examples/models.hpp) built once for VTA and run on the
// simulator at several token counts, against a reference written here: the same integer and
// float32 arithmetic computed directly with loops over the block's weights, not through
// graph::evaluate or the host kernels. Also: the causal mask's definition and its errors.
#include <dlavm/graph.hpp>
#include <dlavm/vta/hw/sim_device.hpp>

#include <doctest/doctest.h>

#include "../../examples/models.hpp"
#include <cmath>
#include <map>

namespace graph = dlavm::graph;
namespace ne = dlavm::ne;
namespace te = dlavm::te;
namespace vta = dlavm::vta;
using dlavm::DType;

namespace {

// A row-major int64 matrix.
struct Mat {
  std::int64_t rows = 0, cols = 0;
  std::vector<std::int64_t> v;
  Mat(std::int64_t r, std::int64_t c) : rows(r), cols(c), v(static_cast<std::size_t>(r * c)) {}
  std::int64_t& at(std::int64_t i, std::int64_t j) {
    return v[static_cast<std::size_t>(i * cols + j)];
  }
  std::int64_t at(std::int64_t i, std::int64_t j) const {
    return v[static_cast<std::size_t>(i * cols + j)];
  }
};

// requantize with rounding to nearest: clamp((x + 2^(s-1)) >> s, -128, 127)
std::int64_t requant(std::int64_t x, std::int64_t shift) {
  const std::int64_t r = shift > 0 ? std::int64_t{1} << (shift - 1) : 0;
  return std::clamp<std::int64_t>((x + r) >> shift, -128, 127);
}

// y[t, n] = requant(sum_k x[t, k] w[n, k] + b[n])
Mat projection(const Mat& x, const te::NDArray& w, const te::NDArray& b) {
  const std::int64_t n_out = w.shape()[0];
  Mat y(x.rows, n_out);
  for (std::int64_t t = 0; t < x.rows; ++t)
    for (std::int64_t n = 0; n < n_out; ++n) {
      std::int64_t acc = b.at({n});
      for (std::int64_t k = 0; k < x.cols; ++k) acc += x.at(t, k) * w.at({n, k});
      y.at(t, n) = requant(acc, models::Attention::kProjShift);
    }
  return y;
}

// The attention block on x [token, d_model], head h using columns [h*dh, (h+1)*dh).
Mat reference(const Mat& x, const std::map<std::string, te::NDArray>& c, std::int64_t heads) {
  using A = models::Attention;
  const Mat q = projection(x, c.at("wq"), c.at("bq"));
  const Mat k = projection(x, c.at("wk"), c.at("bk"));
  const Mat v = projection(x, c.at("wv"), c.at("bv"));
  const std::int64_t tokens = x.rows, dh = x.cols / heads;
  Mat context(tokens, x.cols);
  for (std::int64_t h = 0; h < heads; ++h)
    for (std::int64_t i = 0; i < tokens; ++i) {
      // scores of query i over every key, dequantized and masked after i
      std::vector<float> s(static_cast<std::size_t>(tokens));
      for (std::int64_t j = 0; j < tokens; ++j) {
        std::int64_t acc = 0;
        for (std::int64_t d = 0; d < dh; ++d) acc += q.at(i, h * dh + d) * k.at(j, h * dh + d);
        s[static_cast<std::size_t>(j)] =
            j > i ? -INFINITY : static_cast<float>(requant(acc, A::kScoreShift)) * A::kScoreScale;
      }
      // float32 softmax: the row's maximum, exp of the differences, their sum in order
      float m = s[0];
      for (float e : s) m = std::max(m, e);
      float sum = 0.0f;
      for (float& e : s) {
        e = std::exp(e - m);
        sum += e;
      }
      std::vector<std::int64_t> p(s.size());
      for (std::size_t j = 0; j < s.size(); ++j)
        p[j] = std::clamp<std::int64_t>(
            static_cast<std::int64_t>(std::nearbyint((s[j] / sum) / A::kProbScale)), -128, 127);
      for (std::int64_t d = 0; d < dh; ++d) {
        std::int64_t acc = 0;
        for (std::int64_t j = 0; j < tokens; ++j)
          acc += p[static_cast<std::size_t>(j)] * v.at(j, h * dh + d);
        context.at(i, h * dh + d) = requant(acc, A::kContextShift);
      }
    }
  return projection(context, c.at("wo"), c.at("bo"));
}

}  // namespace

TEST_CASE("attention: the block on VTA equals a reference written out with loops") {
  const models::Attention net(128, 4, 64);  // 4 heads of 32 dims, up to 64 tokens
  const auto fn = net.function();
  std::map<std::string, te::NDArray> constants;
  graph::for_each_node(fn, [&](const graph::Expr& e) {
    if (const auto* c = e.as<graph::ConstantNode>()) constants.emplace(c->name, *c->value);
  });
  const graph::Target target;
  auto mod = graph::build(fn, target, {.name = "attention"});
  vta::SimDevice dev(target.env.config);
  std::int64_t nonzero = 0, saturated = 0;
  for (const std::int64_t tokens : {1, 5, 33, 64}) {
    CAPTURE(tokens);
    const auto x = te::NDArray::random(DType::int8(), {1, tokens, 128},
                                       40 + static_cast<std::uint64_t>(tokens));
    Mat xm(tokens, 128);
    for (std::int64_t t = 0; t < tokens; ++t)
      for (std::int64_t d = 0; d < 128; ++d) xm.at(t, d) = x.at({0, t, d});
    const graph::NamedArray inputs[] = {{"x", x}};
    const ne::Binding bindings[] = {{"token", tokens}};
    const auto out = mod.run(dev, inputs, bindings).at(0);
    const Mat want = reference(xm, constants, 4);
    REQUIRE(out.shape() == std::vector<std::int64_t>{1, tokens, 128});
    std::int64_t differ = 0;
    for (std::int64_t t = 0; t < tokens; ++t)
      for (std::int64_t d = 0; d < 128; ++d) {
        differ += out.at({0, t, d}) != want.at(t, d);
        nonzero += want.at(t, d) != 0;
        saturated += std::abs(want.at(t, d)) >= 127;
      }
    CHECK(differ == 0);
    // every matmul and projection on VTA, each doing its MACs: six kernels
    std::int64_t vta_steps = 0, macs = 0;
    for (std::size_t i = 0; i < mod.steps().size(); ++i)
      if (mod.steps()[i].kind == graph::ModuleStep::Kind::Vta) {
        ++vta_steps;
        macs += mod.last_run().steps[i].macs;
      }
    CHECK(vta_steps == 6);
    CHECK(macs == 4 * tokens * 128 * 128 + 2 * tokens * tokens * 128);
  }
  // the quantization leaves the values spread: not all zero, not all clipped
  CHECK(nonzero > 1000);
  CHECK(saturated < nonzero / 4);
}

TEST_CASE("causal_mask: -infinity after each query's own position; its shape errors") {
  auto x = te::NDArray::from_floats({2, 3}, {1, 2, 3, 4, 5, 6});  // 2 queries, the last of 3
  const auto y = dlavm::host::causal_mask(x);
  const float inf = INFINITY;
  CHECK(y == te::NDArray::from_floats({2, 3}, {1, 2, -inf, 4, 5, 6}));
  CHECK_THROWS_WITH_AS(
      dlavm::host::causal_mask(te::NDArray::from_floats({3, 2}, {1, 2, 3, 4, 5, 6})),
      "host::causal_mask: x has shape [3, 2]; it needs [..., M, N] with N >= M (M "
      "queries, the last of N positions)",
      dlavm::ShapeError);
  auto q = ne::var("q", 1, 8), k = ne::var("k", 1, 8);
  auto s = graph::input("s", {q, k}, DType::float32());
  CHECK_THROWS_WITH_AS(
      graph::infer_type(graph::function({s}, {graph::causal_mask(s)}), graph::default_ops()),
      "%0 (causal_mask): input 0 (%s) has k keys (dim -1) and q queries (dim -2); a causal mask "
      "needs at least as many keys as queries (the queries are the last positions)",
      dlavm::ShapeError);
  auto past = ne::var("past", 0, 8);
  auto ok = graph::input("ok", {q, past + q}, DType::float32());
  CHECK(graph::infer_type(graph::function({ok}, {graph::causal_mask(ok)}), graph::default_ops())
            .results()[0]
            .type()
            .shape.size() == 2);
}

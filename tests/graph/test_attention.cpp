// The gallery's attention block and LLM decoder layer (examples/models.hpp: graph::llm's blocks
// and llm::Decoder with random weights) built once for VTA
// and run on the simulator at several token counts (the layer through prefills and decode
// steps with its KV cache), against a reference written here: the same integer and float32
// arithmetic computed directly with loops over the weights, not through graph::evaluate or
// the host kernels (the integer-only softmax option takes runtime::integer_softmax, which
// tests/host checks against rows worked out by hand). Also: the causal mask's definition, and
// the errors of bad input.
#include <dlavm/graph.hpp>
#include <dlavm/te/npy.hpp>
#include <dlavm/vta/hw/sim_device.hpp>

#include <doctest/doctest.h>

#include "../../examples/models.hpp"
#include "../vta/temp_dir.hpp"
#include <cmath>
#include <map>

namespace graph = dlavm::graph;
namespace host = dlavm::host;
namespace runtime = dlavm::runtime;
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

using Constants = std::map<std::string, te::NDArray>;
namespace llm = graph::llm;
const llm::Quantization kQuant;  // the defaults, which the gallery's models take

// y[t, n] = requant(sum_k x[t, k] w[n, k] + b[n] (+ residual[t, n]))
Mat projection(const Mat& x, const Constants& c, const std::string& name,
               std::int64_t shift = kQuant.proj_shift, const Mat* residual = nullptr) {
  const auto& w = c.at(name + ".weight");
  const auto& b = c.at(name + ".bias");
  const std::int64_t n_out = w.shape()[0];
  Mat y(x.rows, n_out);
  for (std::int64_t t = 0; t < x.rows; ++t)
    for (std::int64_t n = 0; n < n_out; ++n) {
      std::int64_t acc = b.at({n});
      for (std::int64_t k = 0; k < x.cols; ++k) acc += x.at(t, k) * w.at({n, k});
      if (residual != nullptr) acc += residual->at(t, n);
      y.at(t, n) = requant(acc, shift);
    }
  return y;
}

// Causal attention of q [token, d_model] over the keys and values of every position so far
// (the queries are the last `token` of k.rows positions); head h uses columns [h*dh, (h+1)*dh).
// `softmax`: float32 as written below, or integer-only (runtime::integer_softmax over the
// visible keys, the host's reference of graph::integer_softmax). The scores are scaled by
// 1 / sqrt(dh), written out here.
Mat attend(const Mat& q, const Mat& k, const Mat& v, std::int64_t heads,
           llm::Softmax softmax = llm::Softmax::Float) {
  using A = llm::Softmax;
  const std::int64_t tokens = q.rows, positions = k.rows, past = positions - tokens;
  const std::int64_t dh = q.cols / heads;
  const float score_scale = 1.0f / std::sqrt(static_cast<float>(dh));
  Mat context(tokens, q.cols);
  for (std::int64_t h = 0; h < heads; ++h)
    for (std::int64_t i = 0; i < tokens; ++i) {
      // scores of query i over every key, dequantized and masked after its own position
      std::vector<float> s(static_cast<std::size_t>(positions));
      std::vector<std::int64_t> p(s.size());
      for (std::int64_t j = 0; j < positions; ++j) {
        std::int64_t acc = 0;
        for (std::int64_t d = 0; d < dh; ++d) acc += q.at(i, h * dh + d) * k.at(j, h * dh + d);
        p[static_cast<std::size_t>(j)] = requant(acc, kQuant.score_shift);
        s[static_cast<std::size_t>(j)] =
            j > past + i ? -INFINITY
                         : static_cast<float>(p[static_cast<std::size_t>(j)]) * score_scale;
      }
      if (softmax == A::Integer) {
        const std::int64_t visible = past + i + 1;
        runtime::integer_softmax(p.data(), p.data(), 1, visible, 1,
                                 host::integer_exp_for(score_scale));
        std::fill(p.begin() + visible, p.end(), 0);
      }
      if (softmax == A::IntegerSplit || softmax == A::IntegerDeferred) {
        // in its two halves, int8 exponentials in between (deferred: the exponentials alone)
        const std::int64_t visible = past + i + 1;
        runtime::integer_softmax_exp(p.data(), p.data(), 1, visible, 1,
                                     host::integer_exp_for(score_scale));
        if (softmax == A::IntegerSplit)
          runtime::integer_softmax_normalize(p.data(), p.data(), 1, visible, 1);
        std::fill(p.begin() + visible, p.end(), 0);
      }
      if (softmax == A::IntegerDeferred) {
        // the values weighted by the exponentials, then each sum normalized by the reciprocal
        // R = floor(127 * 2^11 / max(sum of the exponentials, 127)) and requantized
        std::int64_t sum = 0;
        for (const auto e : p) sum += e;
        const std::int64_t reciprocal =
            (std::int64_t{127} << 11) / std::max<std::int64_t>(sum, 127);
        for (std::int64_t d = 0; d < dh; ++d) {
          std::int64_t acc = 0;
          for (std::int64_t j = 0; j < positions; ++j)
            acc += p[static_cast<std::size_t>(j)] * v.at(j, h * dh + d);
          context.at(i, h * dh + d) = requant(acc * reciprocal, 11 + kQuant.context_shift);
        }
        continue;
      }
      // float32 softmax: the row's maximum, exp of the differences, their sum in order
      float m = s[0];
      for (float e : s) m = std::max(m, e);
      float sum = 0.0f;
      for (float& e : s) {
        e = std::exp(e - m);
        sum += e;
      }
      if (softmax == A::Float)
        for (std::size_t j = 0; j < s.size(); ++j)
          p[j] = std::clamp<std::int64_t>(
              static_cast<std::int64_t>(std::nearbyint((s[j] / sum) / kQuant.prob_scale)), -128,
              127);
      for (std::int64_t d = 0; d < dh; ++d) {
        std::int64_t acc = 0;
        for (std::int64_t j = 0; j < positions; ++j)
          acc += p[static_cast<std::size_t>(j)] * v.at(j, h * dh + d);
        context.at(i, h * dh + d) = requant(acc, kQuant.context_shift);
      }
    }
  return context;
}

// The attention block on x [token, d_model].
Mat reference(const Mat& x, const Constants& c, std::int64_t heads) {
  const Mat q = projection(x, c, "q"), k = projection(x, c, "k"), v = projection(x, c, "v");
  return projection(attend(q, k, v, heads), c, "o");
}

// int8 -> float32 (x / 32) -> layer norm over each row, in float32 with the host's order of
// operations -> int8 (round half to even of y * 32, saturated)
Mat norm(const Mat& x, const Constants& c, const std::string& name) {
  const float scale = kQuant.norm_scale;
  const auto& gamma = c.at(name + ".gamma");
  const auto& beta = c.at(name + ".beta");
  Mat y(x.rows, x.cols);
  const float count = static_cast<float>(x.cols);
  std::vector<float> row(static_cast<std::size_t>(x.cols));
  for (std::int64_t t = 0; t < x.rows; ++t) {
    float sum = 0.0f;
    for (std::int64_t j = 0; j < x.cols; ++j) {
      row[static_cast<std::size_t>(j)] = (static_cast<float>(x.at(t, j)) - 0.0f) * scale;
      sum += row[static_cast<std::size_t>(j)];
    }
    const float mean = sum / count;
    float sq = 0.0f;
    for (float e : row) sq += (e - mean) * (e - mean);
    const float inv = 1.0f / std::sqrt(sq / count + static_cast<float>(1e-5));
    for (std::int64_t j = 0; j < x.cols; ++j) {
      const float n = (row[static_cast<std::size_t>(j)] - mean) * inv *
                          gamma.fdata()[static_cast<std::size_t>(j)] +
                      beta.fdata()[static_cast<std::size_t>(j)];
      y.at(t, j) =
          std::clamp<std::int64_t>(static_cast<std::int64_t>(std::nearbyint(n / scale)), -128, 127);
    }
  }
  return y;
}

// The decoder layer with its own cache of every position's keys and values.
struct LlmReference {
  Constants c;
  std::int64_t heads;
  llm::Softmax softmax = llm::Softmax::Float;
  Mat keys{0, 0}, values{0, 0};

  Mat step(const Mat& x) {
    const Mat n1 = norm(x, c, "ln1");
    const Mat q = projection(n1, c, "q");
    append(keys, projection(n1, c, "k"));
    append(values, projection(n1, c, "v"));
    const Mat h =
        projection(attend(q, keys, values, heads, softmax), c, "o", kQuant.proj_shift, &x);
    Mat up = projection(norm(h, c, "ln2"), c, "up");
    for (auto& e : up.v) e = std::max<std::int64_t>(e, 0);
    return projection(up, c, "down", llm::DecoderConfig{}.down_shift, &h);
  }
  static void append(Mat& cache, const Mat& rows) {
    if (cache.cols == 0) cache = Mat(0, rows.cols);
    cache.v.insert(cache.v.end(), rows.v.begin(), rows.v.end());
    cache.rows += rows.rows;
  }
};

Constants constants_of(const graph::Function& fn) {
  Constants out;
  graph::for_each_node(fn, [&](const graph::Expr& e) {
    if (const auto* c = e.as<graph::ConstantNode>()) out.emplace(c->name, *c->value);
  });
  return out;
}

Mat rows_of(const te::NDArray& x) {
  Mat m(x.shape()[1], x.shape()[2]);
  for (std::int64_t t = 0; t < m.rows; ++t)
    for (std::int64_t d = 0; d < m.cols; ++d) m.at(t, d) = x.at({0, t, d});
  return m;
}

// One run of the layer on x [1, tokens, d_model] and one step of the reference: the outputs
// that differ; the reference's nonzero outputs are added to `nonzero`.
std::int64_t run_against(graph::Executor& exec, LlmReference& ref, const te::NDArray& x,
                         std::int64_t& nonzero) {
  const std::int64_t tokens = x.shape()[1], d_model = x.shape()[2];
  const graph::NamedArray inputs[] = {{"x", x}};
  const ne::Binding bindings[] = {{"token", tokens}};
  const auto out = exec.run(inputs, bindings).at(0);
  const Mat want = ref.step(rows_of(x));
  std::int64_t differ = 0;
  for (std::int64_t t = 0; t < tokens; ++t)
    for (std::int64_t d = 0; d < d_model; ++d) {
      differ += out.at({0, t, d}) != want.at(t, d);
      nonzero += want.at(t, d) != 0;
    }
  return differ;
}

}  // namespace

TEST_CASE("attention: the block on VTA equals a reference written out with loops") {
  const models::Attention net(128, 4, 64);  // 4 heads of 32 dims, up to 64 tokens
  const auto fn = net.function();
  const Constants constants = constants_of(fn);
  const graph::Target target;
  auto mod = graph::build(fn, target, {.name = "attention"});
  vta::SimDevice dev(target.env.config);
  graph::Executor exec(mod, dev);
  std::int64_t nonzero = 0, saturated = 0;
  for (const std::int64_t tokens : {1, 5, 33, 64}) {
    CAPTURE(tokens);
    const auto x = te::NDArray::random(DType::int8(), {1, tokens, 128},
                                       40 + static_cast<std::uint64_t>(tokens));
    const Mat xm = rows_of(x);
    const graph::NamedArray inputs[] = {{"x", x}};
    const ne::Binding bindings[] = {{"token", tokens}};
    const auto out = exec.run(inputs, bindings).at(0);
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
        macs += exec.last_run().steps[i].macs;
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

TEST_CASE("llm layer: prefills and decode steps with the KV cache equal the reference") {
  // d_model 128, 4 heads, FFN 256, a context of 64 positions
  const models::LlmLayer net(128, 4, 256, 64);
  const auto fn = net.function();
  const graph::Target target;
  auto mod = graph::build(fn, target, {.name = "llm"});
  vta::SimDevice dev(target.env.config);
  graph::Executor exec(mod, dev);
  std::uint64_t seed = 70;
  std::int64_t runs = 0, nonzero = 0, vta_steps = 0, reused = 0;
  std::int64_t prev_tokens = 0, prev_tiles = 0;  // of the previous run
  for (const auto& s : mod.steps()) vta_steps += s.kind == graph::ModuleStep::Kind::Vta;
  CHECK(vta_steps == 8);  // the 6 projections and FFN denses, the 2 attention matmuls
  for (const std::vector<std::int64_t>& schedule :
       {std::vector<std::int64_t>{5, 1, 1, 1}, {1, 1, 1}, {14, 1, 1, 1}, {17, 1}, {63, 1}}) {
    exec.reset_state();
    LlmReference ref{constants_of(fn), 4};
    for (const std::int64_t tokens : schedule) {
      const auto past = exec.state("k_cache").shape()[2];
      CAPTURE(past);
      CAPTURE(tokens);
      const auto x = te::NDArray::random(DType::int8(), {1, tokens, 128}, seed++);
      CHECK(run_against(exec, ref, x, nonzero) == 0);
      // the cache holds every position's keys, head by head
      const auto& k = exec.state("k_cache");
      REQUIRE(k.shape() == std::vector<std::int64_t>{1, 4, past + tokens, 32});
      std::int64_t cache_differ = 0;
      for (std::int64_t h = 0; h < 4; ++h)
        for (std::int64_t p = 0; p < past + tokens; ++p)
          for (std::int64_t d = 0; d < 32; ++d)
            cache_differ += k.at({0, h, p, d}) != ref.keys.at(p, h * 32 + d);
      CHECK(cache_differ == 0);
      // a step's stream is instantiated only when the dims of its packed operands change:
      // token for the projections and the FFN, token and the tiles of positions for the
      // attention matmuls
      const std::int64_t tiles = (past + tokens + 15) / 16;
      for (std::size_t i = 0; i < mod.steps().size(); ++i) {
        const auto& s = mod.steps()[i];
        if (s.kind != graph::ModuleStep::Kind::Vta) continue;
        const bool changed =
            tokens != prev_tokens || (s.op.starts_with("matmul") && tiles != prev_tiles);
        CHECK(exec.last_run().steps[i].instantiated == changed);
        reused += !exec.last_run().steps[i].instantiated;
      }
      prev_tokens = tokens;
      prev_tiles = tiles;
      ++runs;
    }
  }
  CHECK(runs == 15);
  CHECK(reused >= 30);
  CHECK(nonzero > 5000);
  // full: 64 positions held; the next step is refused before it runs
  const auto x = te::NDArray::random(DType::int8(), {1, 1, 128}, 1);
  const graph::NamedArray inputs[] = {{"x", x}};
  const ne::Binding one[] = {{"token", 1}};
  CHECK_THROWS_WITH_AS(exec.run(inputs, one),
                       "module 'llm': state 'k_cache' is full: it holds 64 along dim 2, and a run "
                       "starts from at most 63 (`last_token`'s maximum); reset_state() to start "
                       "over, or build with a larger maximum",
                       dlavm::CapacityError);
  exec.reset_state();
  const auto big = te::NDArray::random(DType::int8(), {1, 65, 128}, 2);
  const graph::NamedArray big_inputs[] = {{"x", big}};
  const ne::Binding too_many[] = {{"token", 65}};
  CHECK_THROWS_WITH_AS(exec.run(big_inputs, too_many),
                       doctest::Contains("symbolic dim 'token' = 65 is outside its range [1, 64]"),
                       dlavm::Error);
  // heads that do not divide d_model: the decoder refuses its config; the head split on its
  // own names its node and the numbers
  CHECK_THROWS_WITH_AS(models::LlmLayer(120, 7, 256, 64),
                       "decoder: d_model 120 is no positive multiple of heads 7 (ffn 256)",
                       dlavm::ValueError);
  const auto x120 = graph::input("x", {1, net.token(), 120}, DType::int8());
  const llm::Linear w120{te::NDArray(DType::int8(), {120, 120}),
                         te::NDArray(DType::int32(), {120})};
  CHECK_THROWS_WITH_AS(
      graph::infer_type(
          graph::function({x120}, {llm::split_heads(llm::projection(x120, w120, "q"), 7)}), target),
      doctest::Contains("(reshape): cannot reshape input 0 (%q) (1, token, 120) to [0, 0, 7, "
                        "-1]: the dims not copied hold `120` elements, which is not provably a "
                        "multiple of 7"),
      dlavm::ShapeError);
}

TEST_CASE("llm layer: the integer-only softmax options equal their reference, near the float one") {
  // d_model 128, 4 heads, FFN 256, a context of 64 positions; the same weights in both layers;
  // one softmax kernel, its two halves, or the exponentials alone with the context normalized
  // on the host
  for (const auto how :
       {llm::Softmax::Integer, llm::Softmax::IntegerSplit, llm::Softmax::IntegerDeferred}) {
    const bool split = how == llm::Softmax::IntegerSplit;
    const bool deferred = how == llm::Softmax::IntegerDeferred;
    CAPTURE(split);
    CAPTURE(deferred);
    const models::LlmLayer net(128, 4, 256, 64, 64, 21, how);
    const models::LlmLayer float_net(128, 4, 256, 64, 64, 21, llm::Softmax::Float);
    const graph::Target target;
    auto mod = graph::build(net.function(), target, {.name = "llm_int"});
    auto float_mod = graph::build(float_net.function(), target, {.name = "llm_float"});
    // the softmax is one VTA step, or two, int8 in and out: no dequantize, mask or quantize
    // steps, and no host softmax
    std::int64_t softmax_steps = 0, host_softmax = 0, float_steps = 0, host_normalize = 0;
    for (const auto& s : mod.steps()) {
      softmax_steps +=
          s.kind == graph::ModuleStep::Kind::Vta && s.workload.op.starts_with("integer_softmax");
      host_softmax +=
          s.kind == graph::ModuleStep::Kind::Host && s.op.starts_with("integer_softmax");
      host_normalize +=
          s.kind == graph::ModuleStep::Kind::Host && s.op == "integer_context_normalize";
      float_steps += s.op == "softmax" || s.op == "causal_mask" || s.op == "quantize_linear";
    }
    // split: the exponentials, their normalization; deferred: the exponentials, and the
    // normalization of the context on the host
    CHECK(softmax_steps == (split ? 2 : 1));
    CHECK(host_softmax == 0);
    CHECK(host_normalize == (deferred ? 1 : 0));
    CHECK(float_steps == 2);  // the two layer norms' quantize_linear
    vta::SimDevice dev(target.env.config);
    graph::Executor exec(mod, dev), float_exec(float_mod, dev);
    LlmReference ref{constants_of(net.function()), 4, how};
    std::uint64_t seed = 90;
    std::int64_t differ = 0, from_float = 0, largest = 0, compared = 0;
    for (const std::int64_t tokens : {9, 1, 1, 20, 1}) {
      const auto x = te::NDArray::random(DType::int8(), {1, tokens, 128}, seed++);
      const graph::NamedArray inputs[] = {{"x", x}};
      const ne::Binding bindings[] = {{"token", tokens}};
      const auto out = exec.run(inputs, bindings).at(0);
      const auto float_out = float_exec.run(inputs, bindings).at(0);
      const Mat want = ref.step(rows_of(x));
      for (std::int64_t t = 0; t < tokens; ++t)
        for (std::int64_t d = 0; d < 128; ++d) {
          differ += out.at({0, t, d}) != want.at(t, d);
          const auto delta = std::abs(out.at({0, t, d}) - float_out.at({0, t, d}));
          from_float += delta != 0;
          largest = std::max(largest, delta);
          ++compared;
        }
    }
    CHECK(differ == 0);
    // the scores and the probabilities cross between VTA steps as one copy of packed bytes each
    // (graph::relayout_chains: unpack, transpose, pack), and so do the query's heads and the
    // context's, and the new keys and values into their caches (unpack, reshape, transpose,
    // append); keep_values runs them one by one, to the same result. Deferred: the
    // exponentials go to the host's normalization too, and the context comes from it, so
    // neither crosses as one copy
    const auto chains = graph::relayout_chains(mod);
    CHECK(chains.size() == (deferred ? 4 : 6));
    CHECK(std::count_if(chains.begin(), chains.end(), [](const auto& c) { return c.append; }) == 2);
    for (const auto& c : chains) {
      CHECK(exec.last_run().steps[c.unpack].relayout);
      CHECK(exec.last_run().steps[c.pack].relayout);
      for (const auto m : c.moves) CHECK(exec.last_run().steps[m].relayout);
    }
    {
      graph::Executor kept(mod, dev), fused(mod, dev);
      for (const std::int64_t tokens : {5, 1}) {
        const auto x = te::NDArray::random(DType::int8(), {1, tokens, 128}, seed++);
        const graph::NamedArray inputs[] = {{"x", x}};
        const ne::Binding bindings[] = {{"token", tokens}};
        const auto a = kept.run(inputs, bindings, {.keep_values = true}).at(0);
        CHECK(a == fused.run(inputs, bindings).at(0));
        for (const auto& s : kept.last_run().steps) CHECK_FALSE(s.relayout);
      }
    }
    // the integer softmax moves some outputs by a unit or two, most not at all: when written,
    // 536 of 4096 by at most 1, split 853 by at most 2 (each exponential rounded to int8 in
    // between); deferred 1,141 by at most 2, because the float layer rounds each probability
    // to int8 as the others do, where it does not (its context is the closest to the exact
    // one: tests/host)
    CHECK(from_float > 0);
    CHECK(from_float * 100 < compared * (deferred ? 30 : split ? 22 : 15));
    CHECK(largest <= (split || deferred ? 2 : 1));
  }
}

TEST_CASE("llm::integer_probabilities: one kernel or two, and Float refused") {
  auto scores = graph::input("scores", {1, 8, ne::var("token", 1, 16), 32}, DType::int8());
  const auto ops_of = [](const graph::Expr& e) {
    std::vector<std::string> ops;
    for (auto at = e; at.as<graph::CallNode>() != nullptr;
         at = at.as<graph::CallNode>()->args.at(0))
      ops.push_back(at.as<graph::CallNode>()->op());
    return ops;
  };
  CHECK(ops_of(llm::integer_probabilities(scores, 0.125f)) ==
        std::vector<std::string>{"transpose", "integer_softmax", "transpose"});
  CHECK(ops_of(llm::integer_probabilities(scores, 0.125f, llm::Softmax::IntegerSplit)) ==
        std::vector<std::string>{"transpose", "integer_softmax_normalize", "integer_softmax_exp",
                                 "transpose"});
  CHECK_THROWS_WITH_AS(llm::integer_probabilities(scores, 0.125f, llm::Softmax::Float),
                       "llm::integer_probabilities: Softmax::Float is not an integer softmax",
                       dlavm::ValueError);
  CHECK_THROWS_WITH_AS(
      llm::integer_probabilities(scores, 0.125f, llm::Softmax::IntegerDeferred),
      "llm::integer_probabilities: Softmax::IntegerDeferred computes no probabilities (attend "
      "normalizes the context)",
      dlavm::ValueError);
  CHECK_THROWS_WITH_AS(
      llm::integer_probabilities(scores, 0.125f, static_cast<llm::Softmax>(7)),
      "llm::integer_probabilities: Softmax 7 is none of Float, Integer, IntegerSplit and "
      "IntegerDeferred",
      dlavm::ValueError);
}

TEST_CASE("llm layer: instantiation copies loop iterations, the words of every call") {
  // a context of 1,024 positions: the integer softmax's passes over chunks of 128 keys run up
  // to 9 iterations; 8 heads: the attention matmuls' loops over pairs of heads four, each
  // entering its kernels with the sizes of the key tiles inside (kernel memos of several keys)
  const models::LlmLayer net(128, 8, 128, 1024, 64, 21, llm::Softmax::Integer);
  const auto mod = graph::build(net.function(), graph::Target{}, {.name = "llm_copies"});
  std::size_t memoized = 0, streams = 0;
  for (const auto& s : mod.steps()) {
    if (s.kind != graph::ModuleStep::Kind::Vta) continue;
    const auto& p = *s.program;
    memoized += p.memoized_loops();
    const std::vector<std::uint64_t> phys(s.inputs.size() + 1, 0x100000);
    for (const std::int64_t token : {1, 17})
      for (const std::int64_t last : {std::int64_t{0}, std::int64_t{255}, std::int64_t{256},
                                      std::int64_t{700}, 1024 - token}) {
        CAPTURE(p.name());
        CAPTURE(token);
        CAPTURE(last);
        const ne::Binding bindings[] = {{"token", token}, {"last_token", last}};
        const auto copied = p.instantiate(bindings, phys);
        vta::Builder b(p.env().config);
        p.write(b, bindings, phys, /*copy_loops=*/false);
        b.finish();
        const auto every_call = b.take();
        CHECK(copied.insns == every_call.insns);
        CHECK(copied.uops == every_call.uops);
        CHECK(copied.uop_relocs == every_call.uop_relocs);
        ++streams;
      }
  }
  CHECK(memoized >= 3);  // the softmax's three passes at least
  CHECK(streams > 0);
}

TEST_CASE("llm layer: decode steps rewrite the streams in place, the words instantiate writes") {
  // a context of 1,024 positions: the integer softmax in chunks of 128 keys, whose stream
  // changes with every position (its last chunk's sizes) and its shape once in 128; one
  // kernel, or two (each in chunks of 128 keys)
  for (const auto how : {llm::Softmax::Integer, llm::Softmax::IntegerSplit}) {
    const bool split = how == llm::Softmax::IntegerSplit;
    CAPTURE(split);
    const models::LlmLayer net(128, 8, 128, 1024, 512, 21, how);
    const graph::Target target;
    const auto mod = graph::build(net.function(), target, {.name = "llm_rewrite"});
    std::size_t rewritten = 0, softmax_rewritten = 0, compared = 0;
    for (const auto& s : mod.steps()) {
      if (s.kind != graph::ModuleStep::Kind::Vta) continue;
      const auto& p = *s.program;
      CAPTURE(p.name());
      const std::vector<std::uint64_t> phys(s.inputs.size() + 1, 0x100000);
      const auto at = [](std::int64_t last) {
        return std::vector<ne::Binding>{{"token", 1}, {"last_token", last}};
      };
      vta::StreamTape tape;
      auto stream = p.instantiate(at(240), phys, tape);
      for (std::int64_t last = 241; last <= 290; ++last) {
        CAPTURE(last);
        const auto want = p.instantiate(at(last), phys);
        if (p.reinstantiate(stream, tape, at(last))) {
          ++rewritten;
          softmax_rewritten += s.workload.op.starts_with("integer_softmax");
        } else {
          stream = p.instantiate(at(last), phys, tape);
        }
        CHECK(stream.insns == want.insns);
        CHECK(stream.uops == want.uops);
        CHECK(stream.uop_relocs == want.uop_relocs);
        ++compared;
      }
    }
    MESSAGE(rewritten, " of ", compared, " streams rewritten, ", softmax_rewritten,
            " of them the softmax's");
    // all but 255 -> 256, where a chunk starts, and 271 -> 272, where the last chunk's keys
    // pass 16 (its kernel of sixteens into the narrowed running rows starts:
    // graph::detail::narrow_running_rows) (split: in both halves)
    CHECK(softmax_rewritten == (split ? 96 : 48));

    // the executor rewrites them too, and decodes as the reference does, after a prefill of 300
    // tokens whose queries see one to three of the chunks of keys (the softmax's passes skip the
    // others: graph::IntegerSoftmaxKernel::skip_masked_work)
    vta::SimDevice dev(target.env.config);
    graph::Executor exec(mod, dev);
    LlmReference ref{constants_of(net.function()), 8, how};
    std::size_t softmax_step = mod.steps().size(), steps_rewritten = 0, differ = 0;
    for (std::size_t i = 0; i < mod.steps().size(); ++i)
      if (mod.steps()[i].workload.op == (split ? "integer_softmax_exp" : "integer_softmax"))
        softmax_step = i;
    REQUIRE(softmax_step < mod.steps().size());
    std::uint64_t seed = 120;
    for (int step = 0; step < 12; ++step) {
      const std::int64_t tokens = step == 0 ? 300 : 1;
      const auto x = te::NDArray::random(DType::int8(), {1, tokens, 128}, seed++);
      const graph::NamedArray inputs[] = {{"x", x}};
      const ne::Binding bindings[] = {{"token", tokens}};
      const auto out = exec.run(inputs, bindings).at(0);
      const Mat want = ref.step(rows_of(x));
      for (std::int64_t t = 0; t < tokens; ++t)
        for (std::int64_t d = 0; d < 128; ++d) differ += out.at({0, t, d}) != want.at(t, d);
      const auto& stats = exec.last_run().steps[softmax_step];
      CHECK(stats.instantiated);  // a new position: the softmax's stream changes every step
      steps_rewritten += stats.reinstantiated;
    }
    CHECK(differ == 0);
    CHECK(steps_rewritten == 10);  // every decode step after the first (300 tokens -> 1)
  }
}

TEST_CASE(
    "llm::Decoder: the user's weights from .npy files, a head size of 16, equal the reference") {
  // d_model 32 in 2 heads of 16: the scores scaled by 1/4; the weights written as .npy files
  // and read back by name
  const llm::DecoderConfig config{
      .d_model = 32, .heads = 2, .ffn = 64, .max_context = 16, .max_tokens = 8};
  const auto drawn = llm::random_decoder_weights(config, 5);
  const dlavm_test::TempDir dir("llm_decoder_weights");
  for (const auto& [name, a] : llm::named_arrays(drawn))
    te::write_npy(dir.path / ("layer0." + name + ".npy"), a);
  const auto weights = llm::read_decoder_weights(dir.path, "layer0.");
  CHECK(llm::named_arrays(weights) == llm::named_arrays(drawn));
  CHECK(llm::decoder_weight_names().size() == 16);
  const llm::Decoder layer(config, weights);
  CHECK(layer.score_scale() == 0.25f);
  const graph::Target target;
  auto mod = graph::build(layer.function(), target, {.name = "decoder"});
  vta::SimDevice dev(target.env.config);
  graph::Executor exec(mod, dev);
  LlmReference ref{llm::named_arrays(weights), 2};
  std::int64_t nonzero = 0;
  for (const std::int64_t tokens : {5, 1, 1}) {
    const auto x = te::NDArray::random(DType::int8(), {1, tokens, 32},
                                       30 + static_cast<std::uint64_t>(tokens));
    CHECK(run_against(exec, ref, x, nonzero) == 0);
  }
  CHECK(nonzero > 100);
  // a score scale of the user's own
  auto scaled = config;
  scaled.score_scale = 0.1f;
  CHECK(llm::Decoder(scaled, weights).score_scale() == 0.1f);
}

TEST_CASE("llm::Decoder: missing, misshapen and mistyped weights are refused by name") {
  const llm::DecoderConfig config{.d_model = 32, .heads = 2, .ffn = 64, .max_context = 16};
  auto arrays = llm::named_arrays(llm::random_decoder_weights(config, 5));
  arrays.erase("q.bias");
  CHECK_THROWS_WITH_AS(llm::decoder_weights(arrays),
                       "decoder weights: no array named 'q.bias' (15 arrays given)",
                       dlavm::ValueError);
  auto w = llm::random_decoder_weights(config, 5);
  w.up.weight = te::NDArray(DType::int8(), {64, 16});
  CHECK_THROWS_WITH_AS(llm::Decoder(config, w),
                       "decoder weight 'up.weight' is int8[64, 16], expected int8[64, 32]",
                       dlavm::ShapeError);
  w = llm::random_decoder_weights(config, 5);
  w.ln2.beta = te::NDArray(DType::int8(), {32});
  CHECK_THROWS_WITH_AS(llm::Decoder(config, w),
                       "decoder weight 'ln2.beta' is int8[32], expected float32[32]",
                       dlavm::TypeError);
  CHECK_THROWS_WITH_AS(llm::read_decoder_weights("/nonexistent/dlavm"),
                       doctest::Contains("ln1.gamma.npy"), dlavm::Error);
  CHECK_THROWS_WITH_AS(llm::score_scale_for(0), "score_scale_for: head size 0 is not positive",
                       dlavm::ValueError);
  // the blocks check what they are given, named
  const auto x = graph::input("x", {1, 4, 32}, DType::int8());
  CHECK_THROWS_WITH_AS(
      llm::projection(x, {te::NDArray(DType::int8(), {32, 32}), te::NDArray(DType::int32(), {16})},
                      "q"),
      "projection 'q': the bias has 16 elements, the weight 32 output rows", dlavm::ShapeError);
}

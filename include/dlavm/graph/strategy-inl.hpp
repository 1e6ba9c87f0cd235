// Definitions for graph/strategy.hpp: the registry and the conv2d, dense and pooling strategies.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/graph/ops/conv.hpp>
#include <dlavm/graph/ops/integer_ops.hpp>
#include <dlavm/graph/ops/pool.hpp>
#include <dlavm/graph/printer.hpp>
#include <dlavm/graph/strategy.hpp>
#include <dlavm/ne/bounds.hpp>
#include <dlavm/ne/eval.hpp>
#include <dlavm/ne/simplify.hpp>
#include <dlavm/vta/hw/config.hpp>
#include <dlavm/vta/lower/intrinsic_calls.hpp>
#include <dlavm/vta/lower/passes.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <bit>

namespace dlavm::graph {

DLAVM_INLINE Workload workload_of(const AnchorCall& a, const Epilogue& epilogue) {
  return {std::string(a.op), a.call.arg_types, a.result, a.call.attrs, epilogue};
}

DLAVM_INLINE void VtaStrategies::add(AnchorStrategy s) {
  if (s.op.empty()) raise<ValueError>("VTA strategy: the op name is empty");
  if (!s.support || !s.arg_layout || !s.result_layout || !s.space || !s.declare)
    raise<ValueError>(
        "VTA strategy '{}': support, arg_layout, result_layout, space and declare are all "
        "required",
        s.op);
  const std::string name = s.op;
  if (!strategies_.emplace(name, std::move(s)).second)
    raise<ValueError>("VTA strategy '{}' is already registered", name);
}

DLAVM_INLINE const AnchorStrategy* VtaStrategies::find(std::string_view op) const {
  auto it = strategies_.find(op);
  return it == strategies_.end() ? nullptr : &it->second;
}

DLAVM_INLINE std::vector<std::string> VtaStrategies::names() const {
  std::vector<std::string> out;
  for (const auto& [name, s] : strategies_) out.push_back(name);
  return out;
}

DLAVM_INLINE void VtaStrategies::add_epilogue(std::string op, EpilogueRule rule) {
  if (op.empty() || !rule) raise<ValueError>("epilogue rule: an op name and a rule are required");
  const std::string name = op;
  if (!epilogue_rules_.emplace(std::move(op), std::move(rule)).second)
    raise<ValueError>("epilogue rule for '{}' is already registered", name);
}

DLAVM_INLINE const EpilogueRule* VtaStrategies::epilogue_rule(std::string_view op) const {
  auto it = epilogue_rules_.find(op);
  return it == epilogue_rules_.end() ? nullptr : &it->second;
}

DLAVM_INLINE void VtaStrategies::set_host_reason(std::string op, std::string why) {
  host_reasons_[std::move(op)] = std::move(why);
}

DLAVM_INLINE const std::string* VtaStrategies::host_reason(std::string_view op) const {
  auto it = host_reasons_.find(op);
  return it == host_reasons_.end() ? nullptr : &it->second;
}

namespace detail {

// Why the arguments' element types are not VTA's int8 inputs and weights.
inline std::optional<std::string> vta_operand_types(const AnchorCall& a, const vta::Env& env) {
  const auto& c = a.call;
  if (c.type(0).dtype != env.inp_dtype || c.type(1).dtype != env.wgt_dtype)
    return fmt::format("VTA multiplies {} inputs by {} weights, the call has {} and {}",
                       env.inp_dtype, env.wgt_dtype, c.type(0).dtype, c.type(1).dtype);
  return std::nullopt;
}

// Rows beyond this are not a usable maximum for VTA buffers (a symbolic dim declared without
// a real bound): 2^24 rows of 16 channels already exceed what a VTA board addresses.
inline constexpr std::int64_t kMaxRows = std::int64_t{1} << 24;

// ShapeError when `dim`, of argument i, can be larger than VTA's buffers are sized for: a
// symbolic dim declared without a real bound, or a huge one (the buffers are sized for the
// maximum).
inline void require_bounded(const AnchorCall& a, std::size_t i, const ne::Expr& dim,
                            std::string_view what) {
  if (const auto max = ne::bounds(dim).max; max > kMaxRows)
    raise<ShapeError>(
        "{}: {} has {} {}, at most {}: more than the {} VTA's buffers are sized for (they are "
        "sized for the maximum); a symbolic dim needs a smaller maximum (ne::var(\"token\", 1, "
        "2048))",
        a.call.label, a.call.arg(i), ne::simplify(dim), what, max, kMaxRows);
}

// Why a dim that the strategy needs constant (channels, kernel) is symbolic.
inline std::optional<std::string> constant_dim(const AnchorCall& a, std::size_t i, std::size_t k,
                                               std::string_view what) {
  if (ne::simplify(a.call.type(i).shape[k]).is_const()) return std::nullopt;
  return fmt::format("the VTA {} strategy needs a constant {}; {} dim {} is `{}`", a.op, what,
                     a.call.arg(i), k, a.call.type(i).shape[k]);
}

inline std::int64_t constant_of(const ne::Expr& d) { return *ne::simplify(d).as_int(); }

// "2 threads", "1 thread"
inline std::string threads_text(std::int64_t n) {
  return fmt::format("{} thread{}", n, n == 1 ? "" : "s");
}

// The workload's convolution; the batch, height and width may be symbolic (support checked
// that the channels and the kernel are constant).
inline Conv2dShape conv2d_shape(const Workload& w) {
  const auto& x = w.args[0].shape;
  const auto& k = w.args[1].shape;
  const auto p = conv2d_params(w.attrs);
  return {.batch = ne::simplify(x[0]),
          .in_channels = constant_of(x[1]),
          .height = ne::simplify(x[2]),
          .width = ne::simplify(x[3]),
          .out_channels = constant_of(k[0]),
          .kernel = {constant_of(k[2]), constant_of(k[3])},
          .strides = p.strides,
          .padding = p.padding,
          .groups = p.groups};
}

inline AnchorStrategy conv2d_strategy() {
  AnchorStrategy s;
  s.op = "conv2d";
  s.int32_results = true;
  s.channel_weights = true;
  s.support = [](const AnchorCall& a, const vta::Env& env,
                 const Epilogue& e) -> std::optional<std::string> {
    if (auto why = vta_operand_types(a, env)) return why;
    const auto p = conv2d_params(a.call.attrs);
    if (p.dilations != std::array<std::int64_t, 2>{1, 1})
      return fmt::format("dilations = [{}]: the VTA strategy runs undilated kernels",
                         fmt::join(p.dilations, ", "));
    if (auto why = constant_dim(a, 0, 1, "channel count")) return why;
    for (std::size_t k = 0; k < 4; ++k)
      if (auto why = constant_dim(a, 1, k, "weight shape")) return why;
    for (std::size_t k : {0, 2, 3})
      require_bounded(a, 0, a.call.type(0).shape[k], fmt::format("as dim {}", k));
    const auto shape = vta_conv2d_shape(env, conv2d_shape(workload_of(a, e)));
    if (auto why = check_groups(env, shape))
      return fmt::format("groups = {}: {}", shape.groups, *why);
    for (auto p : shape.padding)
      if (p > vta::kMaxLoadPad)
        return fmt::format("padding {} exceeds the {} rows or columns VTA's loads pad a side", p,
                           vta::kMaxLoadPad);
    if (auto why = check_tiling(env, shape, e, {.oc_block = 1, .h_block = 1, .w_block = 1}))
      return fmt::format("even one output tile does not fit: {}", *why);
    return std::nullopt;
  };
  // An RGB-like input unfolds its kernel width into the channels (layout.hpp)
  s.arg_layout = [](const Workload& w, const vta::Env& env, std::size_t i) {
    const auto shape = conv2d_shape(w);
    if (unfolds_width(env, shape)) {
      const Layout::Unfold u{shape.kernel[1], shape.strides[1], shape.padding[1], shape.padding[3]};
      return i == 0 ? Layout{Layout::Kind::UnfoldedActivation, env.batch, env.block_in, u}
                    : Layout{Layout::Kind::UnfoldedConvWeight, env.block_out, env.block_in, u};
    }
    if (i == 0) return Layout{Layout::Kind::Activation, env.batch, env.block_in};
    if (shape.groups != 1)
      return Layout{.kind = Layout::Kind::GroupedConvWeight,
                    .rows = env.block_out,
                    .cols = env.block_in,
                    .groups = shape.groups};
    return Layout{Layout::Kind::ConvWeight, env.block_out, env.block_in};
  };
  s.result_layout = [](const Workload&, const vta::Env& env) {
    return Layout{Layout::Kind::Activation, env.batch, env.block_out};
  };
  s.space = [](const Workload& w, const vta::Env& env) {
    return knob_space(env, vta_conv2d_shape(env, conv2d_shape(w)), w.epilogue);
  };
  s.declare = [](const Workload& w, const vta::Env& env, const Knobs& knobs,
                 const std::string& name) {
    const auto logical = conv2d_shape(w);
    const auto shape = vta_conv2d_shape(env, logical);
    const auto t = Conv2dTiling::of(knobs);
    const Conv2dKernel kernel(env, shape, w.epilogue, name, t);
    return VtaKernel{
        kernel.schedule(), kernel.args(),
        fmt::format("oc {}, h {}, w {}, ic {}, {}{}{}{}", t.oc_block, t.h_block, t.w_block,
                    t.ic_block, threads_text(t.vthreads), t.split == 1 ? " over rows" : "",
                    shape.kernel == logical.kernel ? "" : ", width unfolded",
                    knobs.get("strided", 1) == 0 ? ", whole window loaded" : ""),
        tiling_traffic(env, shape, w.epilogue, t), logical.macs()};
  };
  return s;
}

// The dense layer of a workload: rows the product of x's leading dims.
inline DenseShape dense_shape(std::span<const TensorType> args) {
  ne::Expr rows = 1;
  const auto& x = args[0].shape;
  for (std::size_t k = 0; k + 1 < x.size(); ++k) rows = rows * x[k];
  return {ne::simplify(rows), constant_of(args[1].shape[1]), constant_of(args[1].shape[0])};
}

// What dense and matmul share: DenseKernel over the workload's shape (`shape_of`), the left
// operand and the result in layout `rows`, the right operand in `weight`.
inline AnchorStrategy gemm_strategy(std::string op,
                                    DenseShape (*shape_of)(std::span<const TensorType>),
                                    Layout::Kind rows, Layout::Kind weight) {
  AnchorStrategy s;
  s.op = std::move(op);
  s.int32_results = true;
  s.channel_weights = true;
  s.arg_layout = [rows, weight](const Workload&, const vta::Env& env, std::size_t i) {
    return i == 0 ? Layout{rows, env.batch, env.block_in}
                  : Layout{weight, env.block_out, env.block_in};
  };
  s.result_layout = [rows](const Workload&, const vta::Env& env) {
    return Layout{rows, env.batch, env.block_out};
  };
  s.space = [shape_of](const Workload& w, const vta::Env& env) {
    return knob_space(env, shape_of(w.args), w.epilogue);
  };
  s.row_dims = [shape_of](const Workload& w) { return ne::free_vars(shape_of(w.args).rows); };
  s.declare = [shape_of](const Workload& w, const vta::Env& env, const Knobs& knobs,
                         const std::string& name) {
    const DenseShape shape = shape_of(w.args);
    const auto t = DenseTiling::of(knobs);
    const DenseKernel kernel(env, shape, w.epilogue, name);
    return VtaKernel{kernel.schedule(t), kernel.args(),
                     fmt::format("rows {}, n {}, k {}, {}", t.row_block, t.n_block, t.k_block,
                                 threads_text(t.vthreads)),
                     tiling_traffic(env, shape, w.epilogue, t),
                     ne::simplify(shape.batch.value_or(1) * shape.rows * shape.in_features *
                                  shape.out_features)};
  };
  return s;
}

inline AnchorStrategy dense_strategy() {
  AnchorStrategy s =
      gemm_strategy("dense", dense_shape, Layout::Kind::Matrix, Layout::Kind::DenseWeight);
  s.support = [](const AnchorCall& a, const vta::Env& env,
                 const Epilogue& e) -> std::optional<std::string> {
    if (auto why = vta_operand_types(a, env)) return why;
    for (std::size_t k = 0; k < 2; ++k)
      if (auto why = constant_dim(a, 1, k, "weight shape")) return why;
    const DenseShape shape = dense_shape(a.call.arg_types);
    require_bounded(a, 0, shape.rows, "rows");
    if (auto why = check_tiling(env, shape, e, {1, 1, 1, 1}))
      return fmt::format("even one output tile does not fit: {}", *why);
    return std::nullopt;
  };
  return s;
}

// The batched products of a matmul workload a[B..., M, K] . b[B..., K, N]: M, K and N may be
// symbolic (support checked that the batch dims are constant and agree).
inline DenseShape matmul_shape(std::span<const TensorType> args) {
  const auto& a = args[0].shape;
  const auto& b = args[1].shape;
  std::int64_t products = 1;
  for (std::size_t k = 0; k + 2 < a.size(); ++k) products *= constant_of(a[k]);
  return {.rows = ne::simplify(a[a.size() - 2]),
          .in_features = ne::simplify(a.back()),
          .out_features = ne::simplify(b.back()),
          .batch = products};
}

inline AnchorStrategy matmul_strategy() {
  AnchorStrategy s = gemm_strategy("matmul", matmul_shape, Layout::Kind::BatchedMatrix,
                                   Layout::Kind::MatmulWeight);
  s.support = [](const AnchorCall& a, const vta::Env& env,
                 const Epilogue& e) -> std::optional<std::string> {
    if (auto why = vta_operand_types(a, env)) return why;
    const auto& x = a.call.type(0).shape;
    const auto& y = a.call.type(1).shape;
    // one product per batch index: a broadcast batch (a shared right operand) stays on the host
    if (x.size() != y.size())
      return fmt::format("VTA multiplies one pair per batch index; {} has rank {} and {} rank {}",
                         a.call.arg(0), x.size(), a.call.arg(1), y.size());
    for (std::size_t k = 0; k + 2 < x.size(); ++k) {
      if (auto why = constant_dim(a, 0, k, "batch")) return why;
      if (!ne::can_prove(ne::simplify(x[k] - y[k]) == 0))
        return fmt::format(
            "VTA multiplies one pair per batch index; batch dim {} is {} in {} and {} in {}", k,
            x[k], a.call.arg(0), y[k], a.call.arg(1));
    }
    require_bounded(a, 0, x[x.size() - 2], "rows");
    require_bounded(a, 0, x.back(), "columns (K)");
    require_bounded(a, 1, y.back(), "columns (N)");
    if (auto why = check_tiling(env, matmul_shape(a.call.arg_types), e, {1, 1, 1, 1}))
      return fmt::format("even one output tile does not fit: {}", *why);
    return std::nullopt;
  };
  return s;
}

// The pooling of a max_pool2d, avg_pool2d or global_avg_pool2d workload: the batch and height
// may be symbolic (support checked that the rest is constant).
inline Pool2dShape pool2d_shape(const Workload& w) {
  const auto& x = w.args[0].shape;
  Pool2dShape s{.batch = ne::simplify(x[0]),
                .channels = constant_of(x[1]),
                .height = ne::simplify(x[2]),
                .width = constant_of(x[3]),
                .dtype = w.args[0].dtype};
  if (w.op == "global_avg_pool2d") {
    s.kind = Pool2dShape::Kind::Average;
    s.window = {constant_of(x[2]), constant_of(x[3])};
    return s;
  }
  const auto p = pool2d_params(w.attrs);
  s.kind = w.op == "max_pool2d" ? Pool2dShape::Kind::Max : Pool2dShape::Kind::Average;
  s.window = p.pool_size;
  s.strides = p.strides;
  s.padding = p.padding;
  return s;
}

inline AnchorStrategy pool2d_strategy(std::string op) {
  AnchorStrategy s;
  s.op = std::move(op);
  s.support = [](const AnchorCall& a, const vta::Env& env,
                 const Epilogue& e) -> std::optional<std::string> {
    const DType in = a.call.type(0).dtype;
    if (in != env.inp_dtype && in != env.acc_dtype)
      return fmt::format(
          "VTA pools {} values (loaded through ACC_8BIT) or {} ones, the input is {}",
          env.inp_dtype, env.acc_dtype, in);
    if (in == env.inp_dtype && !env.config.variant.load_acc8)
      return fmt::format(
          "VTA loads {} values into the accumulator through LOAD ACC_8BIT, which the {} design "
          "does not have (graph::widen_accumulator_loads gives the pooling an {} input there)",
          in, env.config.variant.name(), env.acc_dtype);
    if (e.int32_result)
      return fmt::format("a pooling's int32 result would leave VTA, which stores only {}",
                         env.out_dtype);
    if (auto why = constant_dim(a, 0, 1, "channel count")) return why;
    // each window element's ALU instruction unrolls a row of output columns into micro-ops
    if (auto why = constant_dim(a, 0, 3, "width")) return why;
    if (a.op == "global_avg_pool2d")
      if (auto why = constant_dim(a, 0, 2, "height (the window of a global pooling)")) return why;
    for (std::size_t k : {0, 2})
      require_bounded(a, 0, a.call.type(0).shape[k], fmt::format("as dim {}", k));
    const auto shape = pool2d_shape(workload_of(a, e));
    if (shape.kind == Pool2dShape::Kind::Average) {
      const auto count = static_cast<std::uint64_t>(shape.window[0] * shape.window[1]);
      if (!std::has_single_bit(count))
        return fmt::format(
            "an average over {} elements divides by {}, which is not a power of "
            "two (VTA's ALU has no divide, only shifts)",
            count, count);
      if (a.op == "avg_pool2d" && !pool2d_params(a.call.attrs).count_include_pad &&
          shape.padding != std::array<std::int64_t, 4>{0, 0, 0, 0})
        return std::string(
            "an average that does not count its padding divides each window by "
            "another count");
    }
    if (auto why = check_tiling(env, shape, e, {1, 1, 1}))
      return fmt::format("even one output row does not fit: {}", *why);
    return std::nullopt;
  };
  s.arg_layout = [](const Workload&, const vta::Env& env, std::size_t) {
    return Layout{Layout::Kind::Activation, env.batch, env.block_out};
  };
  s.result_layout = [](const Workload&, const vta::Env& env) {
    return Layout{Layout::Kind::Activation, env.batch, env.block_out};
  };
  s.space = [](const Workload& w, const vta::Env& env) {
    return knob_space(env, pool2d_shape(w), w.epilogue);
  };
  s.declare = [](const Workload& w, const vta::Env& env, const Knobs& knobs,
                 const std::string& name) {
    const auto shape = pool2d_shape(w);
    const auto t = Pool2dTiling::of(knobs);
    const Pool2dKernel kernel(env, shape, w.epilogue, name);
    return VtaKernel{kernel.schedule(t), kernel.args(),
                     fmt::format("c {}, h {}, {}", t.c_block, t.h_block, threads_text(t.vthreads)),
                     tiling_traffic(env, shape, t), ne::Expr(0)};
  };
  return s;
}

// The lane groups of an integer softmax's scores [B..., N, C]: as many products of the last
// batch dim as fill a tile's lanes side by side (C <= BLOCK_OUT / 2: two queries of 8 heads),
// where there is a batch dim of more than one product; 1 otherwise.
inline std::int64_t integer_softmax_groups(const std::vector<ne::Expr>& x, const vta::Env& env) {
  const auto c = x.back().as_int();
  if (x.size() < 3 || !c || *c < 1 || 2 * *c > env.block_out || x[x.size() - 3].as_int() == 1)
    return 1;
  return env.block_out / *c;
}

// The integer softmax of a workload whose keys are dim -2: the lanes the last dim, the dims
// before the keys its products (the last of them a causal softmax's queries), in lane groups.
inline IntegerSoftmaxShape integer_softmax_shape(const Workload& w, const vta::Env& env,
                                                 IntegerSoftmaxPart part) {
  const auto& x = w.args[0].shape;
  const bool normalize = part == IntegerSoftmaxPart::Normalize;
  const auto p =
      normalize ? integer_softmax_normalize_params(w.attrs) : integer_softmax_params(w.attrs);
  const std::int64_t groups = integer_softmax_groups(x, env);
  ne::Expr products = 1;
  for (std::size_t k = 0; k + 2 < x.size(); ++k)
    products = products * (k + 3 == x.size() ? ne::ceildiv(x[k], groups) : x[k]);
  return {.products = ne::simplify(products),
          .keys = ne::simplify(x[x.size() - 2]),
          .lanes = constant_of(x.back()),
          .queries = p.causal ? ne::simplify(x[x.size() - 3]) : ne::Expr(0),
          .fixed = normalize ? runtime::IntegerExp{} : host::integer_exp_for(p.scale),
          .groups = groups,
          .part = part};
}

// integer_softmax, integer_softmax_exp or integer_softmax_normalize (`part`).
inline AnchorStrategy integer_softmax_strategy(const char* op, IntegerSoftmaxPart part) {
  AnchorStrategy s;
  s.op = op;
  s.support = [part](const AnchorCall& a, const vta::Env& env,
                     const Epilogue& e) -> std::optional<std::string> {
    const auto& x = a.call.type(0);
    // a normalization's input is the exponentials, the others' the scores
    const char* input = part == IntegerSoftmaxPart::Normalize ? "exponentials" : "scores";
    if (x.dtype != env.inp_dtype)
      return fmt::format("VTA loads {} {} (through ACC_8BIT), the input is {}", env.inp_dtype,
                         input, x.dtype);
    if (!env.config.variant.load_acc8)
      return fmt::format(
          "VTA loads the {} through LOAD ACC_8BIT, which the {} design does not have", input,
          env.config.variant.name());
    if (auto why = check_softmax_epilogue(e)) return why;
    if (auto why = graph::check_softmax_shifts(env, part)) return why;
    if (env.batch != 1)
      return fmt::format(
          "VTA normalizes the keys along the accumulator's entries, one key per row; a BATCH of "
          "{} puts {} keys in each",
          env.batch, env.batch);
    const auto p = part == IntegerSoftmaxPart::Normalize
                       ? integer_softmax_normalize_params(a.call.attrs)
                       : integer_softmax_params(a.call.attrs);
    const std::size_t rank = x.ndim();
    const std::size_t axis = a.call.axis("axis", rank);
    if (rank < 2 || axis + 2 != rank)
      return fmt::format(
          "VTA's ALU combines the lanes of a tile only one by one, so the keys must be dim -2 "
          "(the rows) and the last dim the lanes; axis {} of {} (rank {}) is not (transpose the "
          "keys to dim -2)",
          axis, a.call.arg(0), rank);
    if (p.causal && p.queries != host::CausalQueries::Before)
      return std::string(
          "the queries of this causal softmax are the last dim (the lanes), whose visible keys "
          "differ lane by lane; VTA masks the keys of a whole row (put the queries before the "
          "keys: queries = before)");
    if (auto why = constant_dim(a, 0, rank - 1, "lane count (the last dim)")) return why;
    for (std::size_t k = 0; k + 1 < rank; ++k)
      require_bounded(a, 0, x.shape[k], fmt::format("as dim {}", k));
    const auto shape = integer_softmax_shape(workload_of(a, e), env, part);
    const auto space = knob_space(env, shape);
    if (least_cost_point(space)) return std::nullopt;
    // the reason of the chunk that comes nearest to fitting
    std::int64_t nearest = 2;
    for (const auto c : space.knobs[0].values)
      if (footprint(env, shape, c).acc < footprint(env, shape, nearest).acc) nearest = c;
    return fmt::format("no chunk of keys fits: {}", *check_chunk(env, shape, nearest));
  };
  // the scores and the probabilities with the products of the queries' dim in lane groups
  const auto layout = [](const Workload& w, const vta::Env& env) {
    Layout l{Layout::Kind::BatchedMatrix, env.batch, env.block_out};
    l.groups = integer_softmax_groups(w.args[0].shape, env);
    return l;
  };
  s.arg_layout = [layout](const Workload& w, const vta::Env& env, std::size_t) {
    return layout(w, env);
  };
  s.result_layout = layout;
  s.space = [part](const Workload& w, const vta::Env& env) {
    return knob_space(env, integer_softmax_shape(w, env, part));
  };
  s.declare = [part](const Workload& w, const vta::Env& env, const Knobs& knobs,
                     const std::string& name) {
    const auto shape = integer_softmax_shape(w, env, part);
    const std::int64_t chunk = knobs.at("keys");
    const IntegerSoftmaxKernel kernel(env, shape, chunk, name, w.epilogue);
    auto schedule = kernel.schedule();
    auto rewrite = kernel.skip_masked_work(schedule);
    return VtaKernel{std::move(schedule),         kernel.args(), fmt::format("keys {}", chunk),
                     softmax_traffic(env, shape), ne::Expr(0),   std::move(rewrite),
                     kernel.constants()};
  };
  return s;
}

}  // namespace detail

DLAVM_INLINE tir::PrimFunc lower_kernel(VtaKernel& kernel, const vta::Env& env,
                                        const std::string& name) {
  // arguments no stage reads (the rewrite's alone: the integer softmax's weight tile) lowered
  // without, then parameters in their places
  std::vector<te::Tensor> staged;
  std::vector<std::size_t> unstaged;
  for (std::size_t k = 0; k < kernel.args.size(); ++k) {
    if (kernel.schedule.stage_of(kernel.args[k].op().get()) != nullptr)
      staged.push_back(kernel.args[k]);
    else
      unstaged.push_back(k);
  }
  tir::PrimFunc f = vta::lower(kernel.schedule, staged, env, name);
  for (const std::size_t k : unstaged) {
    const te::Tensor& t = kernel.args[k];
    const auto at = static_cast<std::ptrdiff_t>(k);
    f.params.insert(f.params.begin() + at, te::make_buffer(t.name(), t.dtype(), t.shape()));
    f.flat_params.insert(f.flat_params.begin() + at,
                         te::make_buffer(t.name(), t.dtype(), {f.params[k].size()}));
  }
  if (kernel.rewrite) f = kernel.rewrite(f);
  // (an argument nothing reads is a mistake the lowering would have named)
  const auto calls =
      unstaged.empty() ? std::vector<const te::CallNode*>{} : vta::detail::calls_in(f.body);
  for (const std::size_t k : unstaged) {
    const bool read = std::ranges::any_of(calls, [&](const auto* c) {
      return std::ranges::any_of(c->buffers,
                                 [&](const te::Buffer& b) { return b.same_as(f.flat_params[k]); });
    });
    if (!read)
      raise<ScheduleError>("kernel '{}': argument '{}' is read by no stage and not by the rewrite",
                           name, kernel.args[k].name());
  }
  return f;
}

DLAVM_INLINE VtaStrategies default_vta_strategies() {
  VtaStrategies s;
  s.add(detail::conv2d_strategy());
  s.add(detail::dense_strategy());
  s.add(detail::matmul_strategy());
  for (const char* op : {"max_pool2d", "avg_pool2d", "global_avg_pool2d"})
    s.add(detail::pool2d_strategy(op));
  s.add(detail::integer_softmax_strategy("integer_softmax", IntegerSoftmaxPart::Whole));
  s.add(detail::integer_softmax_strategy("integer_softmax_exp", IntegerSoftmaxPart::Exp));
  s.add(
      detail::integer_softmax_strategy("integer_softmax_normalize", IntegerSoftmaxPart::Normalize));
  for (auto& [op, rule] : default_epilogue_rules()) s.add_epilogue(op, std::move(rule));
  s.set_host_reason("rescale",
                    "its float32 multiplier, rounded half to even, is no shift VTA's ALU has: "
                    "kept exact on the host");
  for (const char* op : {"quantize_linear", "dequantize_linear"})
    s.set_host_reason(op, "float32 arithmetic, which VTA does not have");
  return s;
}

}  // namespace dlavm::graph

// Definitions for graph/strategy.hpp: the registry and the conv2d, dense and pooling strategies.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/graph/ops/conv.hpp>
#include <dlavm/graph/ops/pool.hpp>
#include <dlavm/graph/printer.hpp>
#include <dlavm/graph/strategy.hpp>
#include <dlavm/ne/bounds.hpp>
#include <dlavm/ne/eval.hpp>
#include <dlavm/ne/simplify.hpp>

#include <fmt/format.h>

#include <bit>

namespace dlavm::graph {

DLAVM_INLINE Conv2dTiling ScheduleChooser::conv2d(const vta::Env& env, const Conv2dShape& shape,
                                                  const Epilogue& epilogue) const {
  return default_conv2d_tiling(env, shape, epilogue);
}

DLAVM_INLINE DenseTiling ScheduleChooser::dense(const vta::Env& env, const DenseShape& shape,
                                                const Epilogue& epilogue) const {
  return default_dense_tiling(env, shape, epilogue);
}

DLAVM_INLINE Pool2dTiling ScheduleChooser::pool2d(const vta::Env& env, const Pool2dShape& shape,
                                                  const Epilogue& epilogue) const {
  return default_pool2d_tiling(env, shape, epilogue);
}

DLAVM_INLINE void VtaStrategies::add(AnchorStrategy s) {
  if (s.op.empty()) raise<ValueError>("VTA strategy: the op name is empty");
  if (!s.support || !s.arg_layout || !s.result_layout || !s.declare)
    raise<ValueError>(
        "VTA strategy '{}': support, arg_layout, result_layout and declare are all "
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

namespace detail {

// Why the arguments' element types are not VTA's int8 inputs and weights.
inline std::optional<std::string> vta_operand_types(const AnchorCall& a, const vta::Env& env) {
  const auto& c = a.call;
  if (c.type(0).dtype != env.inp_dtype || c.type(1).dtype != env.wgt_dtype)
    return fmt::format("VTA multiplies {} inputs by {} weights, the call has {} and {}",
                       env.inp_dtype, env.wgt_dtype, c.type(0).dtype, c.type(1).dtype);
  return std::nullopt;
}

// Dim k of argument i as a constant, or why it is not one.
inline std::optional<std::string> constant_dims(const AnchorCall& a, std::size_t i,
                                                std::vector<std::int64_t>& out) {
  out.clear();
  for (std::size_t k = 0; k < a.call.type(i).ndim(); ++k) {
    const auto d = ne::simplify(a.call.type(i).shape[k]);
    if (!d.is_const())
      return fmt::format("the VTA {} strategy needs constant dims; {} dim {} is `{}`", a.call.label,
                         a.call.arg(i), k, a.call.type(i).shape[k]);
    out.push_back(*d.as_int());
  }
  return std::nullopt;
}

// Rows beyond this are not a usable maximum for VTA buffers (a symbolic dim declared without
// a real bound): 2^24 rows of 16 channels already exceed what a VTA board addresses.
inline constexpr std::int64_t kMaxRows = std::int64_t{1} << 24;

// Dim k of argument i: ShapeError when it is symbolic without a usable maximum (VTA's buffers
// are sized for the maximum).
inline ne::Expr bounded_dim(const AnchorCall& a, std::size_t i, std::size_t k) {
  const auto d = ne::simplify(a.call.type(i).shape[k]);
  if (const auto max = ne::bounds(d).max; max > kMaxRows)
    raise<ShapeError>(
        "{}: {} dim {} is `{}`, at most {}: a symbolic dim without a usable maximum; VTA's "
        "buffers are sized for the maximum, so declare the dim with one "
        "(ne::var(\"batch\", 1, 64))",
        a.call.label, a.call.arg(i), k, d, max);
  return d;
}

// Why a dim that the strategy needs constant (channels, kernel) is symbolic.
inline std::optional<std::string> constant_dim(const AnchorCall& a, std::size_t i, std::size_t k,
                                               std::string_view what) {
  if (ne::simplify(a.call.type(i).shape[k]).is_const()) return std::nullopt;
  return fmt::format("the VTA {} strategy needs a constant {}; {} dim {} is `{}`", a.op, what,
                     a.call.arg(i), k, a.call.type(i).shape[k]);
}

// The call's convolution; the batch, height and width may be symbolic (their maxima bounded).
inline Conv2dShape conv2d_shape(const AnchorCall& a) {
  const auto& w = a.call.type(1).shape;
  const auto constant = [](const ne::Expr& d) { return *ne::simplify(d).as_int(); };
  const auto p = conv2d_params(a.call.attrs);
  return {.batch = bounded_dim(a, 0, 0),
          .in_channels = constant(a.call.type(0).shape[1]),
          .height = bounded_dim(a, 0, 2),
          .width = bounded_dim(a, 0, 3),
          .out_channels = constant(w[0]),
          .kernel = {constant(w[2]), constant(w[3])},
          .strides = p.strides,
          .padding = p.padding};
}

inline AnchorStrategy conv2d_strategy() {
  AnchorStrategy s;
  s.op = "conv2d";
  s.support = [](const AnchorCall& a, const vta::Env& env,
                 const Epilogue& e) -> std::optional<std::string> {
    if (auto why = vta_operand_types(a, env)) return why;
    if (auto why = constant_dim(a, 0, 1, "channel count")) return why;
    for (std::size_t k = 0; k < 4; ++k)
      if (auto why = constant_dim(a, 1, k, "weight shape")) return why;
    const auto shape = vta_conv2d_shape(env, conv2d_shape(a));
    for (auto p : shape.padding)
      if (p > vta::kMaxLoadPad)
        return fmt::format("padding {} exceeds the {} rows or columns VTA's loads pad a side", p,
                           vta::kMaxLoadPad);
    if (auto why = check_tiling(env, shape, e, {1, 1, 1, 1, 1}))
      return fmt::format("even one output tile does not fit: {}", *why);
    return std::nullopt;
  };
  // An RGB-like input unfolds its kernel width into the channels (layout.hpp)
  s.arg_layout = [](const AnchorCall& a, const vta::Env& env, std::size_t i) {
    const auto shape = conv2d_shape(a);
    if (unfolds_width(env, shape)) {
      const Layout::Unfold u{shape.kernel[1], shape.strides[1], shape.padding[1], shape.padding[3]};
      return i == 0 ? Layout{Layout::Kind::UnfoldedActivation, env.batch, env.block_in, u}
                    : Layout{Layout::Kind::UnfoldedConvWeight, env.block_out, env.block_in, u};
    }
    return i == 0 ? Layout{Layout::Kind::Activation, env.batch, env.block_in}
                  : Layout{Layout::Kind::ConvWeight, env.block_out, env.block_in};
  };
  s.result_layout = [](const AnchorCall&, const vta::Env& env) {
    return Layout{Layout::Kind::Activation, env.batch, env.block_out};
  };
  s.declare = [](const AnchorCall& a, const vta::Env& env, const Epilogue& e,
                 const ScheduleChooser& chooser, const std::string& name) {
    const auto logical = conv2d_shape(a);
    const auto shape = vta_conv2d_shape(env, logical);
    const auto t = chooser.conv2d(env, shape, e);
    const Conv2dKernel kernel(env, shape, e, name);
    VtaKernel k{kernel.schedule(t), kernel.args(),
                fmt::format("oc {}, h {}, w {}, ic {}, {} thread{}{}", t.oc_block, t.h_block,
                            t.w_block, t.ic_block, t.vthreads, t.vthreads == 1 ? "" : "s",
                            shape.kernel == logical.kernel ? "" : ", width unfolded"),
                nullptr, nullptr};
    k.tiling_traffic = [env, shape, e, t](std::span<const ne::Binding> b) {
      return tiling_traffic(env, shape.at(b), e, t);
    };
    k.macs = [macs = logical.macs()](std::span<const ne::Binding> b) { return ne::eval(macs, b); };
    return k;
  };
  return s;
}

// Rows of a dense call: the product of x's leading dims.
inline ne::Expr dense_row_count(const TypeCall& c) {
  ne::Expr rows = 1;
  const auto& x = c.type(0).shape;
  for (std::size_t k = 0; k + 1 < x.size(); ++k) rows = rows * x[k];
  return ne::simplify(rows);
}

inline AnchorStrategy dense_strategy() {
  AnchorStrategy s;
  s.op = "dense";
  s.support = [](const AnchorCall& a, const vta::Env& env,
                 const Epilogue& e) -> std::optional<std::string> {
    if (auto why = vta_operand_types(a, env)) return why;
    std::vector<std::int64_t> w;
    if (auto why = constant_dims(a, 1, w)) return why;
    const auto rows = dense_row_count(a.call);
    if (const auto max = ne::bounds(rows).max; max > kMaxRows)
      raise<ShapeError>(
          "{}: {} has {} rows, at most {}: a symbolic dim without a usable maximum; VTA's "
          "buffers are sized for the maximum, so declare the dim with one "
          "(ne::var(\"token\", 1, 2048))",
          a.call.label, a.call.arg(0), rows, max);
    const DenseShape shape{rows, w[1], w[0]};
    if (auto why = check_tiling(env, shape, e, {1, 1, 1, 1}))
      return fmt::format("even one output tile does not fit: {}", *why);
    return std::nullopt;
  };
  s.arg_layout = [](const AnchorCall&, const vta::Env& env, std::size_t i) {
    return i == 0 ? Layout{Layout::Kind::Matrix, env.batch, env.block_in}
                  : Layout{Layout::Kind::DenseWeight, env.block_out, env.block_in};
  };
  s.result_layout = [](const AnchorCall&, const vta::Env& env) {
    return Layout{Layout::Kind::Matrix, env.batch, env.block_out};
  };
  s.declare = [](const AnchorCall& a, const vta::Env& env, const Epilogue& e,
                 const ScheduleChooser& chooser, const std::string& name) {
    const auto& w = a.call.type(1).shape;
    const DenseShape shape{dense_row_count(a.call), *ne::simplify(w[1]).as_int(),
                           *ne::simplify(w[0]).as_int()};
    const auto t = chooser.dense(env, shape, e);
    const DenseKernel kernel(env, shape, e, name);
    VtaKernel k{kernel.schedule(t), kernel.args(),
                fmt::format("rows {}, n {}, k {}, {} thread{}", t.row_block, t.n_block, t.k_block,
                            t.vthreads, t.vthreads == 1 ? "" : "s"),
                nullptr, nullptr};
    k.macs = [shape](std::span<const ne::Binding> b) {
      return ne::eval(shape.rows, b) * shape.in_features * shape.out_features;
    };
    k.tiling_traffic = [env, shape, e, t](std::span<const ne::Binding> b) {
      return tiling_traffic(env, shape, e, t, ne::eval(shape.rows, b));
    };
    return k;
  };
  return s;
}

// The pooling shape of a max_pool2d, avg_pool2d or global_avg_pool2d call: the batch and
// height may be symbolic (support checked that the rest is constant).
inline Pool2dShape pool2d_shape(const AnchorCall& a) {
  const auto& x = a.call.type(0).shape;
  const auto constant = [](const ne::Expr& d) { return *ne::simplify(d).as_int(); };
  Pool2dShape s{.batch = bounded_dim(a, 0, 0),
                .channels = constant(x[1]),
                .height = bounded_dim(a, 0, 2),
                .width = constant(x[3])};
  if (a.op == "global_avg_pool2d") {
    s.kind = Pool2dShape::Kind::Average;
    s.window = {constant(x[2]), constant(x[3])};
    return s;
  }
  const auto p = pool2d_params(a.call.attrs);
  s.kind = a.op == "max_pool2d" ? Pool2dShape::Kind::Max : Pool2dShape::Kind::Average;
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
    if (a.call.type(0).dtype != env.inp_dtype)
      return fmt::format("VTA pools {} values (loaded through ACC_8BIT), the input is {}",
                         env.inp_dtype, a.call.type(0).dtype);
    if (auto why = constant_dim(a, 0, 1, "channel count")) return why;
    // each window element's ALU instruction unrolls a row of output columns into micro-ops
    if (auto why = constant_dim(a, 0, 3, "width")) return why;
    if (a.op == "global_avg_pool2d")
      if (auto why = constant_dim(a, 0, 2, "height (the window of a global pooling)")) return why;
    const auto shape = pool2d_shape(a);
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
  s.arg_layout = [](const AnchorCall&, const vta::Env& env, std::size_t) {
    return Layout{Layout::Kind::Activation, env.batch, env.block_out};
  };
  s.result_layout = [](const AnchorCall&, const vta::Env& env) {
    return Layout{Layout::Kind::Activation, env.batch, env.block_out};
  };
  s.declare = [](const AnchorCall& a, const vta::Env& env, const Epilogue& e,
                 const ScheduleChooser& chooser, const std::string& name) {
    const auto shape = pool2d_shape(a);
    const auto t = chooser.pool2d(env, shape, e);
    const Pool2dKernel kernel(env, shape, e, name);
    VtaKernel k{kernel.schedule(t), kernel.args(),
                fmt::format("c {}, h {}, {} thread{}", t.c_block, t.h_block, t.vthreads,
                            t.vthreads == 1 ? "" : "s"),
                nullptr, nullptr};
    k.tiling_traffic = [env, shape, t](std::span<const ne::Binding> b) {
      return tiling_traffic(env, shape.at(b), t);
    };
    k.macs = [](std::span<const ne::Binding>) { return std::int64_t{0}; };
    return k;
  };
  return s;
}

}  // namespace detail

DLAVM_INLINE VtaStrategies default_vta_strategies() {
  VtaStrategies s;
  s.add(detail::conv2d_strategy());
  s.add(detail::dense_strategy());
  for (const char* op : {"max_pool2d", "avg_pool2d", "global_avg_pool2d"})
    s.add(detail::pool2d_strategy(op));
  return s;
}

}  // namespace dlavm::graph

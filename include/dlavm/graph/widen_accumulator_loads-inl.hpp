// Definitions for graph/widen_accumulator_loads.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/functor.hpp>
#include <dlavm/graph/infer_type.hpp>
#include <dlavm/graph/ops/pool.hpp>
#include <dlavm/graph/ops/quantize.hpp>
#include <dlavm/graph/target.hpp>
#include <dlavm/graph/widen_accumulator_loads.hpp>

#include <bit>
#include <cstdint>
#include <utility>
#include <vector>

namespace dlavm::graph {

namespace detail {

class AccumulatorLoadWidener : public ExprMutator<AccumulatorLoadWidener> {
 public:
  explicit AccumulatorLoadWidener(const vta::Env& env) : env_(env) {}

  Expr visit_call(const CallNode& call, const Expr& e, ArgResults<Expr> args) {
    const bool pool =
        call.op() == "max_pool2d" || call.op() == "avg_pool2d" || call.op() == "global_avg_pool2d";
    if (!pool || call.args.size() != 1 || call.args[0].type().dtype != env_.inp_dtype ||
        !vta_can_average(call))
      return ExprMutator<AccumulatorLoadWidener>::visit_call(call, e, args);
    ++widened;
    Expr wide = graph::call(call.op(), {cast(args[0], env_.acc_dtype)}, call.attrs);
    Expr y = cast(std::move(wide), env_.inp_dtype);
    return call.result_name.empty() ? y : named(y, call.result_name);
  }

  int widened = 0;

 private:
  // An average VTA can take: over a window of a power-of-two count (its ALU shifts, it does not
  // divide). Another stays on the host, where widening it would only cost two casts.
  static bool vta_can_average(const CallNode& call) {
    if (call.op() == "max_pool2d") return true;
    std::int64_t count = 0;
    if (call.op() == "global_avg_pool2d") {
      const auto& shape = call.args[0].type().shape;
      const auto h = shape[2].as_int(), w = shape[3].as_int();
      if (!h || !w) return false;
      count = *h * *w;
    } else {
      const auto p = pool2d_params(call.attrs);
      count = p.pool_size[0] * p.pool_size[1];
    }
    return count > 0 && std::has_single_bit(static_cast<std::uint64_t>(count));
  }

  const vta::Env& env_;
};

}  // namespace detail

DLAVM_INLINE Function widen_accumulator_loads(const Function& fn, const Target& target) {
  if (target.env.config.variant.load_acc8) return fn;
  detail::AccumulatorLoadWidener widener(target.env);
  Function out = widener.mutate(fn);
  if (widener.widened == 0) return fn;
  return detail::infer_types(out, target.ops, {}, detail::HostSupport::Defer);
}

}  // namespace dlavm::graph

// Definitions for graph/infer_type.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/graph/functor.hpp>
#include <dlavm/graph/infer_type.hpp>
#include <dlavm/graph/op.hpp>
#include <dlavm/graph/printer.hpp>
#include <dlavm/ne/bounds.hpp>

#include <fmt/format.h>

namespace dlavm::graph {

namespace detail {

class TypeInferer : public ExprMutator<TypeInferer> {
 public:
  TypeInferer(const OpRegistry& ops, const Function& fn, HostSupport host)
      : ops_(ops), names_(fn), host_(host) {}

  Expr visit_call(const CallNode& call, const Expr& e, ArgResults<Expr> args) {
    const std::string label = names_.label(e);
    const OpRecord* op = ops_.find(call.op());
    if (op == nullptr)
      raise<ValueError>("{}: unknown op '{}'; known ops: {}", label, call.op(),
                        fmt::join(ops_.names(), ", "));
    check_arg_count(*op, label, args.size());
    TypeCall typing;
    typing.label = label;
    typing.attrs = normalize_attrs(op->attrs, call.attrs, label);
    std::vector<Expr> new_args;
    for (std::size_t i = 0; i < args.size(); ++i) {
      new_args.push_back(args[i]);
      typing.arg_names.push_back(names_.name(call.args[i]));
      typing.arg_types.push_back(args[i].type());
    }
    TensorType type = op->type_rule(typing);
    check_result(type, label);
    const Device device = place(*op, typing);
    return typed_call(call.op(), std::move(new_args), std::move(typing.attrs), std::move(type),
                      device, call.result_name);
  }

 private:
  static void check_arg_count(const OpRecord& op, const std::string& label, std::size_t given) {
    if (given >= op.min_args && given <= op.max_args) return;
    if (op.max_args == OpRecord::kVariadic)
      raise<ValueError>("{}: takes at least {} inputs, given {}", label, op.min_args, given);
    if (op.min_args == op.max_args)
      raise<ValueError>("{}: takes {} input{}, given {}", label, op.min_args,
                        op.min_args == 1 ? "" : "s", given);
    raise<ValueError>("{}: takes {} to {} inputs, given {}", label, op.min_args, op.max_args,
                      given);
  }

  static void check_result(const TensorType& type, const std::string& label) {
    for (std::size_t k = 0; k < type.shape.size(); ++k)
      if (!type.shape[k].defined())
        raise<ValueError>("internal: {}: the type rule left dim {} undefined, please report", label,
                          k);
  }

  // The host runs every call its kernel supports; infer_type(fn, target) then moves the calls
  // of VTA groups to VTA (graph/partition.hpp), and leaves a call the host cannot run unplaced
  // (Device::Any) for VTA to take.
  Device place(const OpRecord& op, const TypeCall& typing) const {
    if (!op.host_support) return Device::Host;
    const auto why_not = op.host_support(typing);
    if (!why_not) return Device::Host;
    if (host_ == HostSupport::Defer) return Device::Any;
    raise<TypeError>(
        "{}: the host cannot run this call: {} (infer_type(fn, target) also considers VTA)",
        typing.label, *why_not);
  }

  const OpRegistry& ops_;
  NodeNames names_;
  HostSupport host_;
};

}  // namespace detail

namespace detail {

DLAVM_INLINE Function infer_types(const Function& fn, const OpRegistry& ops, const Attrs& global,
                                  HostSupport host) {
  // no function-wide options are defined yet: any key is unknown
  normalize_attrs({}, global, "infer_type: global attributes");
  Function typed = detail::TypeInferer(ops, fn, host).mutate(fn);
  const NodeNames names(typed);
  // a state's next value has its type, longer where the state grows (a variable dim)
  const auto fits = [](const TensorType& next, const TensorType& state) {
    if (next.dtype != state.dtype || next.ndim() != state.ndim()) return false;
    for (std::size_t k = 0; k < state.ndim(); ++k)
      if (state.shape[k].is_const() ? !ne::can_prove(next.shape[k] == state.shape[k])
                                    : !ne::can_prove(next.shape[k] >= state.shape[k]))
        return false;
    return true;
  };
  for (const auto& st : typed.state())
    if (!fits(st.next.type(), st.input.type()))
      raise<TypeError>("infer_type: state {} is {} but its next value {} is {}",
                       names.name(st.input), type_text(st.input.type()), names.label(st.next),
                       type_text(st.next.type()));
  return typed;
}

}  // namespace detail

DLAVM_INLINE Function infer_type(const Function& fn, const OpRegistry& ops, const Attrs& global) {
  return detail::infer_types(fn, ops, global, detail::HostSupport::Require);
}

}  // namespace dlavm::graph

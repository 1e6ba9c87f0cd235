// Definitions for dlavm/tir/interpreter.hpp (see core/api.hpp).
#pragma once

#include <dlavm/core/error.hpp>
#include <dlavm/te/value_evaluator.hpp>
#include <dlavm/tir/functor.hpp>
#include <dlavm/tir/interpreter.hpp>
#include <dlavm/tir/replay.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>

namespace dlavm::tir {

namespace detail {

class Interpreter : public LoopReplay<Interpreter> {
 public:
  Interpreter(std::span<const ne::Binding> bindings, IntrinsicHandler handler)
      : LoopReplay<Interpreter>(bindings), handler_(std::move(handler)) {}

  void bind(const Buffer& b, te::NDArray& array) {
    check(b, array);
    storage_[b.get()] = &array;
  }
  void check(const Buffer& b, const te::NDArray& array) const {
    const auto dims = shape_of(b);
    if (array.shape() != dims)
      raise<ShapeError>("tir::run: array for buffer '{}' has shape [{}], expected [{}]", b.name(),
                        fmt::join(array.shape(), ", "), fmt::join(dims, ", "));
    if (array.dtype() != b.dtype())
      raise<TypeError>("tir::run: array for buffer '{}' has dtype {}, expected {}", b.name(),
                       array.dtype(), b.dtype());
  }

  void visit_allocate(const AllocateNode& n, const Stmt&) {
    te::NDArray local(n.buffer.dtype(), shape_of(n.buffer));
    auto* previous = std::exchange(storage_[n.buffer.get()], &local);
    visit(n.body);
    storage_[n.buffer.get()] = previous;
  }
  void visit_store(const StoreNode& n, const Stmt&) {
    const auto v = value(n.value);
    auto& array = array_of(n.buffer);
    const auto idx = indices(n.indices);
    array.set_flat(array.offset(idx, n.buffer.name()), v);
  }
  void visit_evaluate(const EvaluateNode& n, const Stmt&) { (void)value(n.value); }

 private:
  std::vector<std::int64_t> shape_of(const Buffer& b) const {
    std::vector<std::int64_t> dims;
    for (const auto& d : b.shape()) dims.push_back(env_.eval(d));
    return dims;
  }
  te::NDArray& array_of(const Buffer& b) {
    auto it = storage_.find(b.get());
    if (it == storage_.end() || it->second == nullptr)
      raise<ValueError>("tir::run: buffer '{}' is used outside its allocation", b.name());
    return *it->second;
  }
  std::vector<std::int64_t> indices(const std::vector<ne::Expr>& in) const {
    std::vector<std::int64_t> out;
    out.reserve(in.size());
    for (const auto& i : in) out.push_back(env_.eval(i));
    return out;
  }
  std::int64_t value(const te::Expr& e) {
    te::detail::ValueEvaluator ev(
        env_,
        [](const te::ReadNode& r, std::span<const std::int64_t>) -> std::int64_t {
          raise<ValueError>("tir::run: tensor read '{}' left in lowered code", r.op->name);
        },
        [this](const te::LoadNode& l, std::span<const std::int64_t> idx) {
          auto& array = array_of(l.buffer);
          return array.data()[array.offset(idx, l.buffer.name())];
        });
    if (const auto* call = e.as<te::CallNode>()) {
      if (!handler_) raise<ValueError>("tir::run: no handler for intrinsic '{}'", call->name);
      std::vector<std::int64_t> args;
      for (const auto& a : call->args) args.push_back(ev.visit(a));
      std::vector<te::NDArray*> buffers;
      for (const auto& b : call->buffers) buffers.push_back(&array_of(b));
      handler_(*call, args, buffers);
      return 0;
    }
    return ev.visit(e);
  }

  IntrinsicHandler handler_;
  std::unordered_map<const te::BufferNode*, te::NDArray*> storage_;
};

}  // namespace detail

}  // namespace dlavm::tir

namespace dlavm::tir {

DLAVM_INLINE void run(const PrimFunc& func, std::span<te::NDArray* const> args,
                      std::span<const ne::Binding> bindings, IntrinsicHandler handler) {
  if (args.size() != func.params.size())
    raise<ValueError>("tir::run of '{}': {} arrays given for {} parameters", func.name, args.size(),
                      func.params.size());
  detail::Interpreter interp(bindings, std::move(handler));
  if (func.flat_params.empty()) {
    for (std::size_t k = 0; k < args.size(); ++k) interp.bind(func.params[k], *args[k]);
    interp.visit(func.body);
    return;
  }
  // A flattened function addresses one-dimensional views of the arrays.
  std::vector<te::NDArray> flat;
  flat.reserve(args.size());
  for (std::size_t k = 0; k < args.size(); ++k) {
    interp.check(func.params[k], *args[k]);
    flat.emplace_back(args[k]->dtype(),
                      std::vector<std::int64_t>{static_cast<std::int64_t>(args[k]->size())});
    std::copy(args[k]->data().begin(), args[k]->data().end(), flat.back().data().begin());
    interp.bind(func.flat_params[k], flat.back());
  }
  interp.visit(func.body);
  for (std::size_t k = 0; k < args.size(); ++k)
    std::copy(flat[k].data().begin(), flat[k].data().end(), args[k]->data().begin());
}

DLAVM_INLINE void run(const PrimFunc& func, std::initializer_list<te::NDArray*> args,
                      std::initializer_list<ne::Binding> bindings, IntrinsicHandler handler) {
  run(func, std::span<te::NDArray* const>(args.begin(), args.size()),
      std::span<const ne::Binding>(bindings.begin(), bindings.size()), std::move(handler));
}

}  // namespace dlavm::tir

// Evaluating ne index expressions under an environment that binds variables by identity
// (loop variables of the same name in different loops stay distinct), falling back to
// bindings by name for the symbolic dims (`{"token", 37}`). Used by te::evaluate and by the
// TIR interpreter.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/ne.hpp>

#include <fmt/format.h>

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace dlavm::te {

class IndexEnv {
 public:
  explicit IndexEnv(std::span<const ne::Binding> symbols = {}) : symbols_(symbols) {}

  // Binds v (shadowing outer bindings of it) and returns the slot to update it through.
  std::size_t push(const ne::Var& v, std::int64_t value) {
    scope_.emplace_back(v.id(), value);
    return scope_.size() - 1;
  }
  void pop() { scope_.pop_back(); }
  void set(std::size_t slot, std::int64_t value) { scope_[slot].second = value; }

  std::int64_t lookup(const ne::VarNode& v) const {
    for (auto it = scope_.rbegin(); it != scope_.rend(); ++it)
      if (it->first == v.id) return it->second;
    for (const auto& b : symbols_) {
      if (b.name != v.name) continue;
      if (b.value < v.min || b.value > v.max)
        raise<ValueError>("symbolic dim '{}' = {} is outside its range [{}, {}]", v.name, b.value,
                          v.min, v.max);
      return b.value;
    }
    raise<ValueError>(
        "no value for variable '{}': no enclosing loop binds it and no symbolic dim of that name "
        "was given (bind symbolic dims by name, e.g. {{\"{}\", 1}})",
        v.name, v.name);
  }

  std::int64_t eval(const ne::Expr& e) const;

 private:
  std::vector<std::pair<std::uint64_t, std::int64_t>> scope_;
  std::span<const ne::Binding> symbols_;
};

}  // namespace dlavm::te

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/te/index_eval-inl.hpp>
#endif

// Definitions for graph/op.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/graph/op.hpp>
#include <dlavm/graph/printer.hpp>
#include <dlavm/host/common.hpp>
#include <dlavm/ne/bounds.hpp>
#include <dlavm/ne/ops.hpp>
#include <dlavm/ne/printer.hpp>
#include <dlavm/ne/simplify.hpp>

#include <fmt/format.h>

namespace dlavm::graph {

DLAVM_INLINE std::string TypeCall::arg(std::size_t i) const {
  return fmt::format("input {} ({})", i, i < arg_names.size() ? arg_names[i] : "?");
}

DLAVM_INLINE void TypeCall::require_rank(std::size_t i, std::size_t rank) const {
  if (type(i).ndim() != rank)
    raise<ShapeError>("{}: {} must have {} dims, got {}", label, arg(i), rank, type_text(type(i)));
}

DLAVM_INLINE void TypeCall::require_min_rank(std::size_t i, std::size_t rank) const {
  if (type(i).ndim() < rank)
    raise<ShapeError>("{}: {} must have at least {} dims, got {}", label, arg(i), rank,
                      type_text(type(i)));
}

DLAVM_INLINE void TypeCall::require_same_dtype(std::size_t i, std::size_t j) const {
  if (type(i).dtype != type(j).dtype)
    raise<TypeError>("{}: {} is {} but {} is {}; they must have one dtype (cast one first)", label,
                     arg(i), type(i).dtype, arg(j), type(j).dtype);
}

DLAVM_INLINE void TypeCall::require_equal(const ne::Expr& a, std::string_view what_a,
                                          const ne::Expr& b, std::string_view what_b) const {
  if (ne::can_prove(a == b)) return;
  const bool differ = ne::can_prove(a != b);
  raise<ShapeError>("{}: {} is {} but {} is {}{}", label, what_a, a, what_b, b,
                    differ ? "" : " (they may differ for some values of the symbolic dims)");
}

DLAVM_INLINE std::int64_t TypeCall::constant_dim(std::size_t i, std::size_t k,
                                                 std::string_view why) const {
  const ne::Expr d = ne::simplify(type(i).shape[k]);
  if (auto v = d.as_int()) return *v;
  raise<ShapeError>("{}: {} dim {} is `{}`, a symbolic dim; {}", label, arg(i), k, type(i).shape[k],
                    why);
}

DLAVM_INLINE const std::vector<std::int64_t>& TypeCall::ints(std::string_view name,
                                                             std::size_t count) const {
  const auto& v = attrs.get_ints(name);
  if (v.size() != count)
    raise<ValueError>("{}: attribute '{}' is [{}] ({} values); it takes {}", label, name,
                      fmt::join(v, ", "), v.size(), count);
  return v;
}

DLAVM_INLINE std::size_t TypeCall::axis(std::string_view name, std::size_t rank) const {
  return host::detail::axis_or_raise(label, name, attrs.get_int(name), rank);
}

DLAVM_INLINE const AttrSpec* OpRecord::find_attr(std::string_view key) const {
  for (const AttrSpec& s : attrs)
    if (s.name == key) return &s;
  return nullptr;
}

DLAVM_INLINE void OpRegistry::add(OpRecord op) {
  if (op.name.empty()) raise<ValueError>("OpRegistry::add: the op name is empty");
  if (!op.type_rule || !op.host_kernel)
    raise<ValueError>("OpRegistry::add: op '{}' needs a type rule and a host kernel", op.name);
  if (op.min_args > op.max_args)
    raise<ValueError>("OpRegistry::add: op '{}' takes at least {} and at most {} inputs", op.name,
                      op.min_args, op.max_args);
  if (ops_.contains(op.name))
    raise<ValueError>("OpRegistry::add: op '{}' is already registered", op.name);
  std::string name = op.name;
  ops_.emplace(std::move(name), std::move(op));
}

DLAVM_INLINE const OpRecord* OpRegistry::find(std::string_view name) const {
  auto it = ops_.find(name);
  return it == ops_.end() ? nullptr : &it->second;
}

DLAVM_INLINE const OpRecord& OpRegistry::at(std::string_view name) const {
  if (const OpRecord* op = find(name)) return *op;
  raise<ValueError>("unknown op '{}'; known ops: {}", name, fmt::join(names(), ", "));
}

DLAVM_INLINE std::vector<std::string> OpRegistry::names() const {
  std::vector<std::string> out;
  out.reserve(ops_.size());
  for (const auto& [name, op] : ops_) out.push_back(name);
  return out;
}

DLAVM_INLINE Attrs normalize_attrs(std::span<const AttrSpec> specs, const Attrs& given,
                                   std::string_view label) {
  auto known = [&] {
    std::vector<std::string_view> names;
    for (const AttrSpec& s : specs) names.push_back(s.name);
    return names.empty() ? std::string("none") : fmt::format("{}", fmt::join(names, ", "));
  };
  for (const auto& entry : given) {
    bool found = false;
    for (const AttrSpec& s : specs) found = found || s.name == entry.key;
    if (!found)
      raise<ValueError>("{}: unknown attribute '{}'; known attributes: {}", label, entry.key,
                        known());
  }
  Attrs out;
  for (const AttrSpec& s : specs) {
    const AttrValue* v = given.find(s.name);
    if (v == nullptr) {
      if (!s.default_value)
        raise<ValueError>("{}: attribute '{}' ({}{}{}) is required", label, s.name,
                          describe(s.kind), s.description.empty() ? "" : ": ", s.description);
      out.set(s.name, *s.default_value);
      continue;
    }
    if (s.kind == AttrKind::Float && kind_of(*v) == AttrKind::Int) {
      out.set(s.name, static_cast<double>(std::get<std::int64_t>(*v)));
      continue;
    }
    if (s.kind == AttrKind::Floats && kind_of(*v) == AttrKind::Ints) {
      const auto& ints = std::get<std::vector<std::int64_t>>(*v);
      out.set(s.name, std::vector<double>(ints.begin(), ints.end()));
      continue;
    }
    if (kind_of(*v) != s.kind)
      raise<TypeError>("{}: attribute '{}' is {} ({}), expected {}", label, s.name,
                       describe(kind_of(*v)), to_string(*v), describe(s.kind));
    if (s.kind == AttrKind::String && !s.choices.empty()) {
      const auto& str = std::get<std::string>(*v);
      bool allowed = false;
      for (const auto& c : s.choices) allowed = allowed || c == str;
      if (!allowed)
        raise<ValueError>("{}: attribute '{}' is \"{}\"; allowed: {}", label, s.name, str,
                          fmt::join(s.choices, ", "));
    }
    out.set(s.name, *v);
  }
  return out;
}

}  // namespace dlavm::graph

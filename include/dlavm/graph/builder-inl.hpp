// Definitions for graph/builder.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/graph/builder.hpp>

#include <fmt/format.h>

namespace dlavm::graph {

DLAVM_INLINE void GraphBuilder::define(std::string name, Definition d) {
  if (name.empty()) raise<ValueError>("GraphBuilder: a value with an empty name");
  if (auto it = defs_.find(name); it != defs_.end())
    raise<ValueError>("GraphBuilder: '{}' is defined twice: first as {}, then as {}", name,
                      describe(it->second), describe(d));
  order_.push_back(name);
  defs_.emplace(std::move(name), std::move(d));
}

DLAVM_INLINE std::string GraphBuilder::describe(const Definition& d) const {
  if (d.leaf.defined()) return d.leaf.kind() == NodeKind::Input ? "an input" : "a constant";
  return fmt::format("a call to '{}'", d.op);
}

DLAVM_INLINE void GraphBuilder::input(std::string name, std::vector<ne::Expr> shape, DType dtype) {
  Expr leaf = graph::input(name, std::move(shape), dtype);
  define(std::move(name), {.leaf = std::move(leaf)});
}

DLAVM_INLINE void GraphBuilder::constant(std::string name, te::NDArray value) {
  Expr leaf = graph::constant(name, std::move(value));
  define(std::move(name), {.leaf = std::move(leaf)});
}

DLAVM_INLINE void GraphBuilder::call(std::string result, std::string op,
                                     std::vector<std::string> args, Attrs attrs) {
  if (op.empty()) raise<ValueError>("GraphBuilder: '{}' calls an op with an empty name", result);
  define(std::move(result),
         {.op = std::move(op), .args = std::move(args), .attrs = std::move(attrs)});
}

DLAVM_INLINE bool GraphBuilder::defines(std::string_view name) const {
  return defs_.contains(std::string(name));
}

DLAVM_INLINE std::unordered_map<std::string_view, Expr> GraphBuilder::build_values() const {
  std::unordered_map<std::string_view, Expr> built;
  for (const std::string& name : order_)
    if (defs_.at(name).leaf.defined()) built.emplace(name, defs_.at(name).leaf);
  // Depth-first over argument names, iteratively; a name met again while on the path is a
  // cycle, and the path from it is the cycle.
  std::vector<std::string_view> path;
  std::unordered_map<std::string_view, std::size_t> on_path;  // name -> index in path
  for (const std::string& start : order_) {
    if (built.contains(start)) continue;
    path.push_back(start);
    on_path.emplace(start, 0);
    while (!path.empty()) {
      const std::string_view name = path.back();
      const Definition& d = defs_.at(std::string(name));
      std::string_view pending;  // the first argument not built yet
      for (std::size_t i = 0; i < d.args.size() && pending.empty(); ++i) {
        const std::string& a = d.args[i];
        if (built.contains(a)) continue;
        if (!defs_.contains(a))
          raise<ValueError>("GraphBuilder: '{}' = {}(...): argument {} '{}' is not defined", name,
                            d.op, i, a);
        if (auto it = on_path.find(a); it != on_path.end()) {
          std::vector<std::string_view> cycle(
              path.begin() + static_cast<std::ptrdiff_t>(it->second), path.end());
          cycle.push_back(a);
          raise<ValueError>("GraphBuilder: the values form a cycle: {}", fmt::join(cycle, " -> "));
        }
        pending = a;
      }
      if (!pending.empty()) {
        on_path.emplace(pending, path.size());
        path.push_back(pending);
        continue;
      }
      std::vector<Expr> args;
      for (const std::string& a : d.args) args.push_back(built.at(a));
      built.emplace(name, graph::call(d.op, std::move(args), d.attrs, std::string(name)));
      on_path.erase(name);
      path.pop_back();
    }
  }
  return built;
}

DLAVM_INLINE Function GraphBuilder::build(const std::vector<std::string>& params,
                                          const std::vector<std::string>& results) const {
  const auto built = build_values();
  auto resolve = [&](const std::string& name, std::string_view role) {
    auto it = built.find(name);
    if (it == built.end()) raise<ValueError>("GraphBuilder: {} '{}' is not defined", role, name);
    return it->second;
  };
  std::vector<Expr> param_exprs, result_exprs;
  for (const std::string& p : params) {
    Expr e = resolve(p, "param");
    if (e.kind() != NodeKind::Input)
      raise<ValueError>("GraphBuilder: param '{}' is {}; params must be inputs", p,
                        describe(defs_.at(p)));
    param_exprs.push_back(std::move(e));
  }
  for (const std::string& r : results) result_exprs.push_back(resolve(r, "result"));
  return Function(std::move(param_exprs), std::move(result_exprs));
}

}  // namespace dlavm::graph

// Definitions for dlavm/tir/printer.hpp (see core/api.hpp).
#pragma once

#include <dlavm/tir/functor.hpp>
#include <dlavm/tir/printer.hpp>

namespace dlavm::tir {

namespace detail {

class Printer : public StmtVisitor<Printer> {
 public:
  std::string out;

  void visit_for(const ForNode& n, const Stmt&) {
    const auto name = rename(n.var);
    const char* head = n.for_kind == ForKind::VThread ? "vthread" : "for";
    line("{} ({}, {}, {}){} {{", head, name, index(n.min), index(n.extent),
         n.for_kind == ForKind::Unrolled ? " unroll" : "");
    nested(n.body);
    line("}}");
  }
  void visit_allocate(const AllocateNode& n, const Stmt&) {
    line("allocate({}, {}, [{}]), storage_scope = {}", n.buffer.name(), n.buffer.dtype(),
         join(n.buffer.shape()), n.buffer.scope());
    visit(n.body);
  }
  void visit_store(const StoreNode& n, const Stmt&) {
    line("{}[{}] = {}", n.buffer.name(), join(n.indices), value(n.value));
  }
  // An annotation of one statement prints as a comment above it; one of several statements
  // (a micro-op kernel) encloses them in braces.
  void visit_attr(const AttrNode& n, const Stmt&) {
    if (n.body.as<SeqNode>() == nullptr) {
      line("// attr [{}] {} = {}", n.node, n.key, index(n.value));
      visit(n.body);
      return;
    }
    line("attr [{}] {} = {} {{", n.node, n.key, index(n.value));
    nested(n.body);
    line("}}");
  }
  void visit_if(const IfThenElseNode& n, const Stmt&) {
    line("if ({}) {{", index(n.cond));
    nested(n.then_case);
    if (n.else_case.defined()) {
      line("}} else {{");
      nested(n.else_case);
    }
    line("}}");
  }
  void visit_evaluate(const EvaluateNode& n, const Stmt&) { line("{}", value(n.value)); }

  std::string index(const ne::Expr& e) {
    if (renames_.empty()) return fmt::format("{}", e);
    return fmt::format("{}", ne::substitute(e, renames_));
  }

 private:
  template <class... Args>
  void line(fmt::format_string<Args...> f, Args&&... args) {
    out.append(static_cast<std::size_t>(indent_) * 2, ' ');
    out += fmt::format(f, std::forward<Args>(args)...);
    out += '\n';
  }
  void nested(const Stmt& s) {
    ++indent_;
    visit(s);
    --indent_;
  }
  std::string join(const std::vector<ne::Expr>& v) {
    std::string s;
    for (std::size_t k = 0; k < v.size(); ++k) s += (k ? ", " : "") + index(v[k]);
    return s;
  }
  std::string value(const te::Expr& e) {
    struct Renamer : te::ExprMutator<Renamer> {
      Printer* p;
      ne::Expr mutate_index(const ne::Expr& i) {
        return p->renames_.empty() ? i : ne::substitute(i, p->renames_);
      }
    } r;
    r.p = this;
    return te::to_string(r.visit(e));
  }
  // The printed name of a loop variable: its own, or with a suffix when another variable
  // already printed under that name.
  std::string rename(const ne::Var& v) {
    if (auto it = printed_.find(v.id()); it != printed_.end()) return it->second;
    std::string name = v.name();
    for (int k = 1; used_.count(name) != 0; ++k) name = fmt::format("{}_{}", v.name(), k);
    used_.insert(name);
    printed_.emplace(v.id(), name);
    if (name != v.name()) renames_.emplace_back(v, ne::var(name, v.min(), v.max()));
    return name;
  }

  int indent_ = 1;
  std::unordered_map<std::uint64_t, std::string> printed_;
  std::unordered_set<std::string> used_;
  std::vector<ne::Substitution> renames_;
};

}  // namespace detail

}  // namespace dlavm::tir

namespace dlavm::tir {

DLAVM_INLINE std::string to_string(const Stmt& s, int indent) {
  detail::Printer p;
  (void)indent;
  p.visit(s);
  return p.out;
}

DLAVM_INLINE std::string to_string(const PrimFunc& f) {
  std::vector<std::string> params;
  for (const auto& b : f.params) {
    std::vector<std::string> dims;
    for (const auto& d : b.shape()) dims.push_back(fmt::format("{}", d));
    params.push_back(fmt::format("{}: {}[{}]", b.name(), b.dtype(), fmt::join(dims, ", ")));
  }
  return fmt::format("primfn {}({}) {{\n{}}}\n", f.name, fmt::join(params, ", "),
                     to_string(f.body));
}

}  // namespace dlavm::tir

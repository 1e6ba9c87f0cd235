// Definitions for graph/dot.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/dot.hpp>
#include <dlavm/graph/partition.hpp>
#include <dlavm/graph/printer.hpp>
#include <dlavm/graph/strategy/epilogue.hpp>

#include <fmt/format.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace dlavm::graph {

namespace detail {

// The length of the UTF-8 sequence starting at s[i], or 0 when the bytes there are not one
// (a stray continuation byte, a truncated or overlong sequence, a surrogate, past U+10FFFF).
inline std::size_t utf8_length(std::string_view s, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char lead = byte(i);
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the range of the second byte
  if (lead >= 0xC2 && lead <= 0xDF) n = 2;
  if (lead >= 0xE0 && lead <= 0xEF) n = 3;
  if (lead >= 0xF0 && lead <= 0xF4) n = 4;
  if (lead == 0xE0) lo = 0xA0;
  if (lead == 0xED) hi = 0x9F;
  if (lead == 0xF0) lo = 0x90;
  if (lead == 0xF4) hi = 0x8F;
  if (n == 0 || i + n > s.size() || byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k)
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  return n;
}

// `s` as the inside of a DOT quoted string that Graphviz shows as `s`: '"' and '\' escaped
// (Graphviz reads \n, \l, \N, ... in labels), a newline as \n (a line break), '&' as &amp;
// (Graphviz reads entities in labels), a tab as a space, other control characters and bytes
// that are not UTF-8 as U+FFFD.
inline std::string dot_escape(std::string_view s) {
  constexpr std::string_view replacement = "\xEF\xBF\xBD";  // U+FFFD
  std::string out;
  for (std::size_t i = 0; i < s.size();) {
    const char c = s[i];
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x80) {
      const std::size_t n = utf8_length(s, i);
      out += n == 0 ? replacement : s.substr(i, n);
      i += n == 0 ? 1 : n;
      continue;
    }
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '&':
        out += "&amp;";
        break;
      case '\t':
        out += ' ';
        break;
      default:
        out += u < 0x20 || u == 0x7F ? replacement : s.substr(i, 1);
    }
    ++i;
  }
  return out;
}

// "\"...\"": a DOT quoted string.
inline std::string dot_quote(std::string_view s) { return fmt::format("\"{}\"", dot_escape(s)); }

// Writes the DOT text of one function: node statements, the clusters of a placement, edges.
class DotWriter {
 public:
  DotWriter(const Function& fn, const DotOptions& options)
      : fn_(fn), options_(options), names_(fn), part_(fn.placement().get()) {
    for (const Expr& e : post_order(fn.roots())) add_node(e);
    for (const Expr& p : fn.params()) add_node(p);  // params no result uses
    for (const State& st : fn.state()) add_node(st.input);
    for (const Expr& r : fn.results()) results_.insert(r.get());
  }

  std::string run() {
    out_ = fmt::format("digraph {} {{\n", dot_quote(options_.name));
    header();
    std::vector<std::vector<const Expr*>> clustered(part_ ? part_->groups.size() : 0);
    for (const Expr& e : nodes_) {
      if (const auto g = cluster_of(e))
        clustered[*g].push_back(&e);
      else
        out_ += fmt::format("  {}\n", node(e));
    }
    for (std::size_t g = 0; g < clustered.size(); ++g)
      if (!clustered[g].empty()) cluster(g, clustered[g]);
    edges();
    out_ += "}\n";
    return std::move(out_);
  }

 private:
  void add_node(const Expr& e) {
    if (ids_.emplace(e.get(), nodes_.size()).second) nodes_.push_back(e);
  }

  std::string id(const Expr& e) const { return fmt::format("n{}", ids_.at(e.get())); }

  // The graph's defaults, and once placed a legend of the colours.
  void header() {
    out_ += "  graph [rankdir=TB, fontname=\"Helvetica\", fontsize=10];\n";
    out_ +=
        "  node [shape=box, style=\"rounded,filled\", fillcolor=white, "
        "fontname=\"Helvetica\", fontsize=10];\n";
    out_ += "  edge [color=\"#555555\", arrowsize=0.7];\n";
    if (part_ != nullptr)
      out_ += "  label=\"vta: blue, one box per fused kernel; host: orange\"; labelloc=b;\n";
  }

  // The group whose box holds call `e`: every VTA group, and any group of several calls.
  std::optional<std::size_t> cluster_of(const Expr& e) const {
    if (part_ == nullptr) return std::nullopt;
    const auto it = part_->group_index.find(e.get());
    if (it == part_->group_index.end()) return std::nullopt;
    const Group& g = part_->groups[it->second];
    if (g.device != Device::Vta && g.calls.size() < 2) return std::nullopt;
    return it->second;
  }

  // `n3 [label="%3\nvta.relu\nTensor[...]", ...];`
  std::string node(const Expr& e) const {
    std::string label = names_.name(e);
    std::string attrs;
    switch (e.kind()) {
      case NodeKind::Input:
        attrs = ", shape=ellipse, fillcolor=\"#d9ead3\"";
        break;
      case NodeKind::Constant:
        attrs = ", fontsize=8, color=gray60, fontcolor=gray35, fillcolor=gray95";
        break;
      case NodeKind::Call:
        label += '\n' + call_text(*e.as<CallNode>());
        attrs = call_style(e);
        break;
    }
    if (options_.types && e.has_type()) label += '\n' + type_text(e.type());
    if (results_.contains(e.get())) attrs += ", peripheries=2";
    return fmt::format("{} [label={}{}];", id(e), dot_quote(label), attrs);
  }

  // "vta.conv2d" and, if asked, the attributes: "groups=1, padding=[1, 1, 1, 1], ...".
  std::string call_text(const CallNode& call) const {
    std::string text = call.op();
    if (call.device != Device::Any) text = fmt::format("{}.{}", device_name(call.device), text);
    if (options_.attributes && !call.attrs.empty()) text += fmt::format("\n{}", call.attrs);
    return text;
  }

  // A placed call's colour and tooltip: its device, and the host's reason.
  std::string call_style(const Expr& e) const {
    const Group* g = part_ != nullptr ? part_->group_of(e) : nullptr;
    if (g == nullptr) return {};
    if (g->device == Device::Vta)
      return fmt::format(", fillcolor=\"#cfe2f3\", tooltip={}", dot_quote("vta: " + ops_of(*g)));
    const std::string why = g->note.empty() ? "host" : "host: " + g->note;
    return fmt::format(", fillcolor=\"#fce5cd\", tooltip={}", dot_quote(why));
  }

  // "conv2d+bias_add+requantize+relu", as a built module's steps name a kernel.
  static std::string ops_of(const Group& g) {
    std::vector<std::string> ops;
    for (const Expr& c : g.calls) ops.push_back(c.name());
    return fmt::format("{}", fmt::join(ops, "+"));
  }

  // `subgraph cluster_N { label="vta: conv2d+...\n<epilogue>"; n2 [...]; ... }`
  void cluster(std::size_t index, const std::vector<const Expr*>& calls) {
    const Group& g = part_->groups[index];
    std::string label = fmt::format("{}: {}", device_name(g.device), ops_of(g));
    if (!g.epilogue.steps.empty()) label += '\n' + to_string(g.epilogue);
    const bool vta = g.device == Device::Vta;
    out_ += fmt::format("  subgraph cluster_{} {{\n", index);
    out_ += fmt::format(
        "    label={}; labelloc=t; labeljust=l; style=\"rounded,dashed\"; color=\"{}\";\n",
        dot_quote(label), vta ? "#3d85c6" : "#e69138");
    for (const Expr* e : calls) out_ += fmt::format("    {}\n", node(*e));
    out_ += "  }\n";
  }

  // One edge per argument, from the argument to its user; a state's next value to its input.
  void edges() {
    for (const Expr& e : nodes_)
      if (const auto* call = e.as<CallNode>())
        for (const Expr& a : call->args) out_ += fmt::format("  {} -> {};\n", id(a), id(e));
    for (const State& st : fn_.state())
      out_ += fmt::format("  {} -> {} [style=dashed, constraint=false, label=\"next\"];\n",
                          id(st.next), id(st.input));
  }

  const Function& fn_;
  const DotOptions& options_;
  NodeNames names_;
  const Partition* part_;
  std::vector<Expr> nodes_;
  std::unordered_map<const Node*, std::size_t> ids_;
  std::unordered_set<const Node*> results_;
  std::string out_;
};

}  // namespace detail

DLAVM_INLINE std::string to_dot(const Function& fn, const DotOptions& options) {
  return detail::DotWriter(fn, options).run();
}

}  // namespace dlavm::graph

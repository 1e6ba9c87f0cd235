// graph::to_dot: the DOT text of an unplaced graph (golden), of a placed one (a cluster per
// VTA kernel, VTA and host calls told apart), names that would break DOT, and, where Graphviz
// is installed, `dot -Tsvg` rendering each of them without a word on stderr.
#include <dlavm/graph/dot.hpp>
#include <dlavm/graph/infer_type.hpp>
#include <dlavm/graph/ops.hpp>
#include <dlavm/graph/place.hpp>
#include <dlavm/graph/target.hpp>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace graph = dlavm::graph;
namespace te = dlavm::te;
namespace fs = std::filesystem;
using dlavm::DType;

namespace dot_test {

std::size_t count(std::string_view text, std::string_view part) {
  std::size_t n = 0;
  for (auto at = text.find(part); at != std::string_view::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

// conv2d + bias_add + requantize + relu (one VTA kernel), then a flatten on the host.
graph::Function conv_then_flatten() {
  auto x = graph::input("x", {1, 16, 6, 6}, DType::int8());
  auto w = graph::constant("w", te::NDArray::random(DType::int8(), {16, 16, 3, 3}, 3, -4, 4));
  auto b = graph::constant("b", te::NDArray::random(DType::int32(), {16}, 4, -4, 4));
  auto y = graph::bias_add(graph::conv2d(x, w, {.padding = {1, 1, 1, 1}}), b);
  y = graph::relu(graph::requantize(y, {.shift = 6}));
  return graph::function({x}, {graph::flatten(y)});
}

// A function whose input, constant and call have names that DOT must escape: quotes,
// backslashes, newlines, a tab, a control character, an ampersand, a byte that is not UTF-8,
// and a UTF-8 letter.
graph::Function hostile() {
  auto x = graph::input("x\"y\\z\nend\t\x01", {4}, DType::int32());
  auto k = graph::constant("k&amp;\xff\xc3\xa9", te::NDArray::random(DType::int32(), {4}, 1));
  return graph::function({x}, {graph::named(graph::add(x, k), "\\\"}; n9 -> n9 //\n")});
}

// The text of DOT quoted string `s` (from its opening quote) as Graphviz shows it, and where
// it ends; nullopt when it does not end on its line.
std::optional<std::pair<std::string, std::size_t>> read_quoted(std::string_view s,
                                                               std::size_t open) {
  std::string text;
  for (std::size_t i = open + 1; i < s.size(); ++i) {
    if (s[i] == '\n') return std::nullopt;
    if (s[i] == '"') return std::pair{text, i + 1};
    if (s[i] != '\\' || i + 1 == s.size()) {
      text += s[i];
      continue;
    }
    const char next = s[++i];
    text += next == 'n' ? '\n' : next;  // \" \\ \n: the escapes to_dot writes
  }
  return std::nullopt;
}

// Every quoted string closes on its line, and the braces outside them balance: the DOT
// lexer reads the text as the writer meant it.
bool well_formed(std::string_view dot) {
  int depth = 0;
  for (std::size_t i = 0; i < dot.size(); ++i) {
    if (dot[i] == '"') {
      const auto q = read_quoted(dot, i);
      if (!q) return false;
      i = q->second - 1;
    } else if (dot[i] == '{') {
      ++depth;
    } else if (dot[i] == '}' && --depth < 0) {
      return false;
    }
  }
  return depth == 0;
}

// The label of node `id` as Graphviz shows it (entities not decoded).
std::string label_of(std::string_view dot, std::string_view id) {
  const auto at = dot.find(fmt::format("  {} [label=\"", id));
  REQUIRE(at != std::string_view::npos);
  const auto q = read_quoted(dot, dot.find('"', at));
  REQUIRE(q);
  return q->first;
}

// The first `dot` on PATH, if any.
std::optional<fs::path> find_dot() {
  const char* path = std::getenv("PATH");
  std::string_view dirs = path != nullptr ? path : "";
  while (!dirs.empty()) {
    const auto colon = dirs.find(':');
    const fs::path candidate = fs::path(dirs.substr(0, colon)) / "dot";
    std::error_code ec;
    if (fs::is_regular_file(candidate, ec) &&
        (fs::status(candidate, ec).permissions() & fs::perms::owner_exec) != fs::perms::none)
      return candidate;
    dirs = colon == std::string_view::npos ? std::string_view() : dirs.substr(colon + 1);
  }
  return std::nullopt;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace dot_test

using namespace dot_test;

TEST_CASE("to_dot: an unplaced graph draws every node and argument once, no clusters") {
  auto x = graph::input("x", {1, 8, 32}, DType::int8());
  auto w = graph::constant("w", te::NDArray::random(DType::int8(), {16, 32}, 1));
  auto y = graph::requantize(graph::dense(x, w), {.shift = 8});
  const auto dot = graph::to_dot(graph::function({x}, {y}));
  CHECK(dot ==
        "digraph \"fn\" {\n"
        "  graph [rankdir=TB, fontname=\"Helvetica\", fontsize=10];\n"
        "  node [shape=box, style=\"rounded,filled\", fillcolor=white, fontname=\"Helvetica\", "
        "fontsize=10];\n"
        "  edge [color=\"#555555\", arrowsize=0.7];\n"
        "  n0 [label=\"%x\\nTensor[(1, 8, 32), int8]\", shape=ellipse, fillcolor=\"#d9ead3\"];\n"
        "  n1 [label=\"%w\\nTensor[(16, 32), int8]\", fontsize=8, color=gray60, "
        "fontcolor=gray35, fillcolor=gray95];\n"
        "  n2 [label=\"%0\\ndense\"];\n"
        "  n3 [label=\"%1\\nrequantize\", peripheries=2];\n"
        "  n0 -> n2;\n"
        "  n1 -> n2;\n"
        "  n2 -> n3;\n"
        "}\n");
  CHECK(well_formed(dot));
  // once typed, each call shows its type; asked, its attributes; the name is the graph's
  const auto typed = graph::infer_type(graph::function({x}, {y}), graph::default_ops());
  const auto text = graph::to_dot(typed, {.name = "fc", .types = true, .attributes = true});
  CHECK(text.starts_with("digraph \"fc\" {\n"));
  CHECK(count(text,
              "  n3 [label=\"%1\\nhost.requantize\\nhi=127, lo=-128, out_dtype=int8, "
              "rounding=\\\"floor\\\", shift=8\\nTensor[(1, 8, 16), int8]\"") == 1);
  CHECK(count(graph::to_dot(typed, {.types = false}), "Tensor[") == 0);
  CHECK(count(text, "cluster") == 0);
  CHECK(count(text, " -> ") == 3);
}

TEST_CASE("to_dot: a placed graph boxes its VTA kernel and tells VTA calls from host calls") {
  const graph::Target target;
  const auto placed = graph::infer_type(conv_then_flatten(), target);
  REQUIRE(placed.placement() != nullptr);
  REQUIRE(placed.placement()->groups.size() == 2);
  const auto dot = graph::to_dot(placed);
  CHECK(well_formed(dot));
  // the kernel's box: its ops and epilogue, holding its four calls and nothing else
  const auto open = dot.find("  subgraph cluster_0 {\n");
  REQUIRE(open != std::string::npos);
  const auto close = dot.find("\n  }\n", open);
  const std::string_view box = std::string_view(dot).substr(open, close - open);
  CHECK(count(box,
              "label=\"vta: conv2d+bias_add+requantize+relu\\n+channel#0 (gemm), >>6, max 0, "
              "min 127\"") == 1);
  for (const char* op : {"conv2d", "bias_add", "requantize", "relu"})
    CHECK(count(box, fmt::format("\\nvta.{}\\n", op)) == 1);
  CHECK(count(box, "fillcolor=\"#cfe2f3\", tooltip=\"vta: conv2d+bias_add+requantize+relu\"") == 4);
  CHECK(count(box, "host.") == 0);
  // the host's flatten outside any box, orange, saying why it is not on VTA; one box in all
  CHECK(count(dot, "subgraph cluster_") == 1);
  const auto flatten = dot.find("\\nhost.flatten\\n");
  REQUIRE(flatten != std::string::npos);
  CHECK((flatten < open || flatten > close));
  CHECK(count(dot,
              "fillcolor=\"#fce5cd\", tooltip=\"host: no VTA strategy for 'flatten'\", "
              "peripheries=2") == 1);
  CHECK(count(dot, "label=\"vta: blue, one box per fused kernel; host: orange\"") == 1);
  // every argument one edge: 2 into the conv2d and the bias_add, 1 into each of the others
  CHECK(count(dot, " -> ") == 7);
  // the same graph built again draws the same text
  CHECK(graph::to_dot(graph::infer_type(conv_then_flatten(), target)) == dot);
}

TEST_CASE("to_dot: a state's next value points back at its input; unused params are drawn") {
  auto x = graph::input("x", {4}, DType::int32());
  auto unused = graph::input("u", {4}, DType::int32());
  auto h = graph::input("h", {4}, DType::int32());
  auto next = graph::add(h, x);
  const auto dot = graph::to_dot(graph::function({x, unused}, {next}, {{h, next}}));
  CHECK(well_formed(dot));
  // post-order: %h n0, %x n1, the add n2; then the param no result uses, n3
  CHECK(label_of(dot, "n3") == "%u\nTensor[(4), int32]");
  CHECK(count(dot, "  n2 -> n0 [style=dashed, constraint=false, label=\"next\"];\n") == 1);
  CHECK(count(dot, " -> ") == 3);
}

TEST_CASE("to_dot: names DOT would misread are escaped, and read back as they are") {
  const auto dot = graph::to_dot(hostile());
  CHECK(well_formed(dot));
  // nodes have ids of their own: the call's name, which reads as DOT, stays in its label
  CHECK(count(dot, "\n  n0 -> n2;\n  n1 -> n2;\n}") == 1);
  CHECK(count(dot, "n9") == 2);
  // a tab as a space, another control character as U+FFFD
  CHECK(label_of(dot, "n0") == "%\"x\\\"y\\\\z\nend \xef\xbf\xbd\"\nTensor[(4), int32]");
  // '&' as an entity (Graphviz shows &amp; as '&'), the stray byte as U+FFFD, the letter kept
  CHECK(label_of(dot, "n1") == "%\"k&amp;amp;\xef\xbf\xbd\xc3\xa9\"\nTensor[(4), int32]");
  CHECK(label_of(dot, "n2") == "%\"\\\\\\\"}; n9 -> n9 //\n\"\nadd");
}

TEST_CASE("to_dot: Graphviz renders the pictures (dot -Tsvg), where it is installed") {
  const auto dot = find_dot();
  if (!dot) {
    MESSAGE(
        "skipped: the `dot` program (Graphviz) is not on PATH, so to_dot's text was not "
        "rendered; tools/setup.sh installs it");
    return;
  }
  const fs::path dir = fs::path(DLAVM_BINARY_DIR) / "tests" / "test_dot";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const graph::Target target;
  const std::vector<std::pair<const char*, graph::Function>> cases{
      {"placed", graph::infer_type(conv_then_flatten(), target)},
      {"unplaced", conv_then_flatten()},
      {"hostile", hostile()}};
  for (const auto& c : cases) {
    const std::string name = c.first;
    CAPTURE(name);
    const fs::path in = dir / fmt::format("{}.dot", name);
    const fs::path svg = dir / fmt::format("{}.svg", name);
    const fs::path err = dir / fmt::format("{}.err", name);
    std::ofstream(in) << graph::to_dot(c.second, {.attributes = true});
    const auto command = fmt::format("'{}' -Tsvg '{}' -o '{}' 2> '{}'", dot->string(), in.string(),
                                     svg.string(), err.string());
    CHECK(std::system(command.c_str()) == 0);
    CHECK(read_file(err) == "");  // no warning: the text is what Graphviz expects
    const auto picture = read_file(svg);
    CHECK(picture.find("<svg") != std::string::npos);
    CHECK(picture.find("</svg>") != std::string::npos);
  }
  MESSAGE("rendered with ", dot->string(), " into ", dir.string());
  fs::remove_all(dir);
}

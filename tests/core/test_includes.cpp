// The include graph of include/dlavm: no cycle, and arrows that point down the layer table of
// docs/design.md only. A header and its definitions (X.hpp, X-inl.hpp) are one node: they
// include each other by design. Read from the source tree, so that a new include that closes a
// cycle or reaches up a layer fails here, naming the files.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace includes_test {

namespace fs = std::filesystem;

// "dlavm/graph/module-inl.hpp" -> "dlavm/graph/module.hpp"
std::string node_of(std::string path) {
  const auto inl = path.rfind("-inl.hpp");
  if (inl != std::string::npos && inl + 8 == path.size()) path = path.substr(0, inl) + ".hpp";
  return path;
}

// The layer a header belongs to: its folder under dlavm/ (vta/hw and vta/lower apart from
// vta), or the folder an umbrella header (dlavm/graph.hpp, dlavm/vta/hw.hpp) stands for.
std::string layer_of(const std::string& node) {
  std::string rest = node.substr(std::string("dlavm/").size());
  if (rest.ends_with(".hpp") && rest.find('/') == std::string::npos)
    return rest.substr(0, rest.size() - 4);  // an umbrella: dlavm/graph.hpp
  if (rest == "vta/hw.hpp" || rest == "vta/lower.hpp") return rest.substr(0, rest.size() - 4);
  if (rest.starts_with("vta/hw/")) return "vta/hw";
  if (rest.starts_with("vta/lower/")) return "vta/lower";
  return rest.substr(0, rest.find('/'));
}

// Which layers each may use directly (docs/design.md; the closure is what it may reach).
const std::map<std::string, std::vector<std::string>> kUses = {
    {"runtime", {}},
    {"core", {}},
    {"ne", {"core"}},
    {"te", {"ne"}},
    {"schedule", {"te"}},
    {"tir", {"schedule"}},
    {"vta/hw", {"core", "runtime"}},
    {"vta/lower", {"tir", "vta/hw"}},
    {"vta", {"vta/lower"}},
    {"host", {"te", "runtime"}},
    {"graph", {"vta", "host"}},
    {"deploy", {"graph"}},
    {"tune", {"graph"}},
    {"quantize", {"graph"}},
    {"dlavm", {"deploy", "tune", "quantize"}},  // the umbrella of everything
};

std::set<std::string> reachable(const std::string& layer) {
  std::set<std::string> out;
  std::vector<std::string> todo{layer};
  while (!todo.empty()) {
    const auto l = todo.back();
    todo.pop_back();
    if (!out.insert(l).second) continue;
    for (const auto& u : kUses.at(l)) todo.push_back(u);
  }
  return out;
}

// Every header's includes of dlavm headers, by node.
std::map<std::string, std::set<std::string>> include_graph() {
  const fs::path root = fs::path(DLAVM_SOURCE_DIR) / "include";
  std::map<std::string, std::set<std::string>> graph;
  for (const auto& entry : fs::recursive_directory_iterator(root / "dlavm")) {
    if (!entry.is_regular_file() || entry.path().extension() != ".hpp") continue;
    const auto node = node_of(fs::relative(entry.path(), root).generic_string());
    auto& edges = graph[node];
    std::ifstream in(entry.path());
    for (std::string line; std::getline(in, line);) {
      std::string target;
      if (line.starts_with("#include <dlavm/")) {
        target = line.substr(10, line.find('>') - 10);
      } else if (line.starts_with("#include \"")) {
        // the including file's folder first, then the include path, as the compiler looks
        const auto name = line.substr(10, line.find('"', 10) - 10);
        const auto near = (fs::path(node).parent_path() / name).lexically_normal();
        target = fs::exists(root / near) ? near.generic_string() : name;
      } else {
        continue;
      }
      target = node_of(target);
      if (target != node) edges.insert(target);
    }
  }
  return graph;
}

using Graph = std::map<std::string, std::set<std::string>>;

// Every cycle a depth-first walk meets, as "a -> b -> a".
std::vector<std::string> find_cycles(const Graph& graph) {
  std::map<std::string, int> state;  // 1: on the path, 2: done
  std::vector<std::string> path, cycles;
  const std::function<void(const std::string&)> visit = [&](const std::string& n) {
    state[n] = 1;
    path.push_back(n);
    if (const auto it = graph.find(n); it != graph.end())
      for (const auto& m : it->second) {
        if (state[m] == 1) {
          std::string cycle;
          for (auto k = std::find(path.begin(), path.end(), m); k != path.end(); ++k)
            cycle += *k + " -> ";
          cycles.push_back(cycle + m);
        } else if (state[m] == 0) {
          visit(m);
        }
      }
    path.pop_back();
    state[n] = 2;
  };
  for (const auto& [n, edges] : graph)
    if (state[n] == 0) visit(n);
  return cycles;
}

// Every include from a layer to one it may not reach.
std::vector<std::string> upward_includes(const Graph& graph) {
  std::vector<std::string> up;
  for (const auto& entry : graph) {
    // (not bindings: REQUIRE_MESSAGE reads its message in a lambda, which cannot capture a
    // binding in Clang before 16)
    const std::string& node = entry.first;
    const auto& edges = entry.second;
    const auto from = layer_of(node);
    REQUIRE_MESSAGE(kUses.count(from) == 1, "no layer for ", node);
    const auto allowed = reachable(from);
    for (const auto& to : edges)
      if (allowed.count(layer_of(to)) == 0)
        up.push_back(node + " (" + from + ") includes " + to + " (" + layer_of(to) + ")");
  }
  return up;
}

TEST_CASE("includes: include/dlavm has no include cycle") {
  const auto graph = include_graph();
  REQUIRE(graph.size() > 100);
  const auto cycles = find_cycles(graph);
  for (const auto& c : cycles) FAIL_CHECK("include cycle: ", c);
  CHECK(cycles.empty());
}

TEST_CASE("includes: every include points down the layer table") {
  const auto up = upward_includes(include_graph());
  for (const auto& u : up) FAIL_CHECK("include reaches up a layer: ", u);
  CHECK(up.empty());
}

TEST_CASE("includes: the checks see a cycle and an upward include") {
  // the rules on known paths, and the detectors on small graphs, so that the two tests above
  // cannot pass vacuously
  CHECK(node_of("dlavm/graph/module-inl.hpp") == "dlavm/graph/module.hpp");
  CHECK(layer_of("dlavm/vta/hw/isa.hpp") == "vta/hw");
  CHECK(layer_of("dlavm/vta/program.hpp") == "vta");
  CHECK(layer_of("dlavm/graph.hpp") == "graph");
  CHECK(reachable("graph").count("runtime") == 1);
  CHECK(reachable("host").count("vta") == 0);
  CHECK(reachable("vta/hw").count("tir") == 0);
  const Graph cycle = {{"dlavm/graph/a.hpp", {"dlavm/graph/b.hpp"}},
                       {"dlavm/graph/b.hpp", {"dlavm/graph/c.hpp"}},
                       {"dlavm/graph/c.hpp", {"dlavm/graph/a.hpp"}}};
  CHECK(find_cycles(cycle) == std::vector<std::string>{"dlavm/graph/a.hpp -> dlavm/graph/b.hpp "
                                                       "-> dlavm/graph/c.hpp -> "
                                                       "dlavm/graph/a.hpp"});
  const Graph down = {{"dlavm/graph/a.hpp", {"dlavm/host/b.hpp", "dlavm/runtime/c.hpp"}}};
  CHECK(find_cycles(down).empty());
  CHECK(upward_includes(down).empty());
  const Graph upward = {{"dlavm/host/b.hpp", {"dlavm/graph/a.hpp"}}};
  CHECK(upward_includes(upward) ==
        std::vector<std::string>{"dlavm/host/b.hpp (host) includes dlavm/graph/a.hpp (graph)"});
  // a quoted include is read relative to its file
  const auto graph = include_graph();
  CHECK(graph.at("dlavm/vta/hw/sim_kernels.hpp").count("dlavm/vta/hw/sim_kernels_simd.hpp") == 1);
}

}  // namespace includes_test

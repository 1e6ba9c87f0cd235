// ONNX's own node tests (Debian's libonnx-testdata), every one: imported, built for VTA and run
// on SimDevice (its host steps on the host), and its outputs compared with the package's
// expected ones: integers bit-exact, floats within the ONNX backend tests' tolerance (rtol
// 1e-3, atol 1e-7). A test the importer refuses (NotSupported, or an element type dlavm does
// not compute on) is skipped with the reason. docs/onnx-node-tests.md must say exactly what
// this run found, test by test: the run writes its own table to the build folder, and a
// difference fails.
#include <dlavm/graph.hpp>
#include <dlavm/onnx/import.hpp>
#include <dlavm/vta/hw/sim_device.hpp>

#include <doctest/doctest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace onnx_node_tests {

using namespace dlavm;
namespace fs = std::filesystem;
namespace importer = dlavm::onnx;

struct Outcome {
  std::string test;
  bool passed = false;
  std::string reason;  // skipped: why; failed: what differs
  bool failed = false;
};

std::vector<std::uint8_t> read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The message without the model file's "path: " and with the test's files named relative to
// its folder, so that the table does not depend on where the package is installed.
std::string reason_of(const std::string& what, const fs::path& dir) {
  std::string m = what;
  const std::string model = (dir / "model.onnx").string() + ": ";
  if (const auto at = m.find(model); at != std::string::npos) m.erase(at, model.size());
  const std::string folder = dir.string() + "/";
  for (auto at = m.find(folder); at != std::string::npos; at = m.find(folder))
    m.erase(at, folder.size());
  std::replace(m.begin(), m.end(), '|', '/');
  std::replace(m.begin(), m.end(), '\n', ' ');
  return m;
}

std::string compare(const te::NDArray& got, const te::NDArray& want, std::size_t k) {
  if (got.dtype() != want.dtype())
    return fmt::format("output {} is {}, expected {}", k, got.dtype(), want.dtype());
  if (got.shape() != want.shape())
    return fmt::format("output {} has shape [{}], expected [{}]", k, fmt::join(got.shape(), ", "),
                       fmt::join(want.shape(), ", "));
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (got.dtype().is_float()) {
      const double g = got.fdata()[i], w = want.fdata()[i];
      if (std::isnan(w) ? !std::isnan(g) : std::abs(g - w) > 1e-7 + 1e-3 * std::abs(w))
        return fmt::format("output {} element {} is {}, expected {}", k, i, g, w);
    } else if (got.data()[i] != want.data()[i]) {
      return fmt::format("output {} element {} is {}, expected {}", k, i, got.data()[i],
                         want.data()[i]);
    }
  }
  return {};
}

Outcome run_test(const fs::path& dir) {
  Outcome o;
  o.test = dir.filename().string();
  const fs::path model_path = dir / "model.onnx";
  ::onnx::ModelProto model;
  const auto bytes = read_bytes(model_path);
  REQUIRE(model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())));
  std::vector<std::string> input_names;
  std::set<std::string> initializers;
  for (const auto& t : model.graph().initializer()) initializers.insert(t.name());
  for (const auto& v : model.graph().input())
    if (initializers.count(v.name()) == 0) input_names.push_back(v.name());
  // sequences and optionals: the data files are not tensors, and the importer says why
  const auto not_tensor = [](const auto& v) { return !v.type().has_tensor_type(); };
  if (std::any_of(model.graph().input().begin(), model.graph().input().end(), not_tensor) ||
      std::any_of(model.graph().output().begin(), model.graph().output().end(), not_tensor)) {
    try {
      importer::import(model_path);
      o.failed = true;
      o.reason = "imported a model whose inputs or outputs are not tensors";
    } catch (const Error& e) {
      o.reason = reason_of(e.what(), dir);
    }
    return o;
  }
  std::vector<fs::path> sets;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0)
      sets.push_back(e.path());
  std::sort(sets.begin(), sets.end());
  for (const auto& set : sets) {
    std::vector<te::NDArray> inputs, outputs;
    try {
      for (const auto& [prefix, arrays] :
           {std::pair{"input", &inputs}, std::pair{"output", &outputs}})
        for (std::size_t k = 0;; ++k) {
          const auto p = set / fmt::format("{}_{}.pb", prefix, k);
          if (!fs::exists(p)) break;
          arrays->push_back(importer::read_tensor(p));
        }
    } catch (const TypeError& e) {  // data of a type dlavm does not compute on
      o.reason = reason_of(e.what(), dir);
      return o;
    }
    // the first input stays an input; the others (a Reshape's shape, a Clip's bounds, the
    // quantization parameters) are given as constants, as initializers would be
    importer::ImportOptions options;
    for (std::size_t k = 1; k < inputs.size() && k < input_names.size(); ++k)
      options.constants.emplace(input_names[k], inputs[k]);
    graph::Function fn = [&] {
      try {
        return importer::import(model_path, options);
      } catch (const importer::NotSupported& e) {
        o.reason = reason_of(e.what(), dir);
      } catch (const TypeError& e) {
        o.reason = reason_of(e.what(), dir);
      }
      return graph::Function({}, {graph::constant("none", te::NDArray(DType::int8(), {1}))});
    }();
    if (!o.reason.empty()) return o;
    try {
      graph::Target target;
      target.int32_results = true;  // integer sums leave VTA as they are
      auto mod = graph::build(fn, target, {.name = o.test});
      vta::SimDevice dev;
      std::vector<graph::NamedArray> named;
      if (!inputs.empty() && !input_names.empty()) named.push_back({input_names[0], inputs[0]});
      const auto got = graph::Executor(mod, dev).run(named);
      if (got.size() != outputs.size()) {
        o.failed = true;
        o.reason = fmt::format("{} outputs, expected {}", got.size(), outputs.size());
        return o;
      }
      for (std::size_t k = 0; k < got.size(); ++k) {
        const std::string diff = compare(got[k], outputs[k], k);
        if (!diff.empty()) {
          o.failed = true;
          o.reason = fmt::format("{}: {}", set.filename().string(), diff);
          return o;
        }
      }
    } catch (const Error& e) {
      o.failed = true;
      o.reason = reason_of(e.what(), dir);
      return o;
    }
  }
  o.passed = true;
  return o;
}

std::string row(const Outcome& o) {
  if (o.passed) return fmt::format("| {} | passed |", o.test);
  if (o.failed) return fmt::format("| {} | FAILED: {} |", o.test, o.reason);
  return fmt::format("| {} | skipped: {} |", o.test, o.reason);
}

TEST_CASE("ONNX node tests: import, build, run, and docs/onnx.md says what happened") {
  const fs::path root = DLAVM_ONNX_NODE_TESTS;
  if (!fs::exists(root)) {
    MESSAGE("skipped: ", root.string(), " not found (tools/setup.sh installs libonnx-testdata)");
    return;
  }
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(root))
    if (fs::exists(e.path() / "model.onnx")) dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  REQUIRE(dirs.size() > 900);
  std::vector<std::string> rows;
  int passed = 0, skipped = 0, failed = 0;
  for (const auto& d : dirs) {
    Outcome o;
    try {
      o = run_test(d);
    } catch (const Error& e) {
      o.test = d.filename().string();
      o.failed = true;
      o.reason = reason_of(e.what(), d);
    }
    passed += o.passed;
    failed += o.failed;
    skipped += !o.passed && !o.failed;
    if (o.failed) FAIL_CHECK(o.test, " failed: ", o.reason);
    rows.push_back(row(o));
  }
  MESSAGE(dirs.size(), " node tests: ", passed, " passed, ", skipped, " skipped, ", failed,
          " failed");
  const fs::path mine = fs::path(DLAVM_BINARY_DIR) / "onnx_node_tests.md";
  {
    std::ofstream out(mine);
    for (const auto& r : rows) out << r << "\n";
  }
  // docs/onnx-node-tests.md's rows (from "| test_" lines) must be this run's, in order
  std::ifstream doc(fs::path(DLAVM_SOURCE_DIR) / "docs" / "onnx-node-tests.md");
  REQUIRE(doc.good());
  std::vector<std::string> documented;
  const std::string totals = fmt::format("{} tests: {} passed, {} skipped, {} failed.", dirs.size(),
                                         passed, skipped, failed);
  bool totals_documented = false;
  for (std::string line; std::getline(doc, line);) {
    if (line.rfind("| test_", 0) == 0) documented.push_back(line);
    totals_documented = totals_documented || line == totals;
  }
  CHECK_MESSAGE(totals_documented, "docs/onnx-node-tests.md does not say: ", totals);
  CHECK_MESSAGE(documented == rows, "docs/onnx-node-tests.md's table differs from this run's ",
                mine.string(), " (copy it in)");
}

}  // namespace onnx_node_tests

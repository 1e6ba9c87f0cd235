// The converter table: its rows against ONNX's operator history, the history against the
// schema registry of the ONNX library the importer links, the version a model's opset selects
// (and its refusal, by operator and version), and docs/onnx.md's operator table, which must be
// operator_support()'s.
#include <dlavm/onnx/import.hpp>

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>

#include "converters.hpp"
#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace onnx_converters_test {

using namespace dlavm;
namespace importer = dlavm::onnx;
namespace detail = dlavm::onnx::detail;

TEST_CASE("converters: rows are sorted, do not overlap, and begin and end at ONNX's versions") {
  const auto rows = detail::converter_rows();
  REQUIRE(!rows.empty());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    CAPTURE(r.op);
    CAPTURE(r.first);
    const auto versions = detail::onnx_versions(r.op);
    CHECK(std::count(versions.begin(), versions.end(), r.first) == 1);
    CHECK(std::count(versions.begin(), versions.end(), r.last) == 1);
    CHECK(r.first <= r.last);
    CHECK((r.convert != nullptr));
    CHECK(!r.becomes.empty());
    if (i > 0) {
      const auto& prev = rows[i - 1];
      CHECK((prev.op < r.op || (prev.op == r.op && prev.last < r.first)));
    }
  }
}

// Debian's libonnx (1.12) knows opsets up to 17: the history the importer holds (from ONNX
// 1.23's changelog) must agree with its schemas there, operator by operator.
TEST_CASE("converters: ONNX's operator history agrees with libonnx's schema registry") {
  const auto range = ::onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map().at("");
  const int known = range.second;
  REQUIRE(known >= 17);
  std::map<std::string, std::set<std::int64_t>> registry;
  for (const auto& s : ::onnx::OpSchemaRegistry::get_all_schemas_with_history())
    if (s.domain().empty() && s.SinceVersion() <= known)
      registry[s.Name()].insert(s.SinceVersion());
  std::set<std::string> ours;
  for (const auto& o : importer::operator_support()) {
    std::set<std::int64_t> until_known;
    for (const auto v : o.versions)
      if (v <= known) until_known.insert(v);
    if (until_known.empty()) continue;
    ours.insert(o.op);
    CAPTURE(o.op);
    CHECK(registry[o.op] == until_known);
  }
  for (const auto& entry : registry) {
    const std::string& op = entry.first;  // (not a binding: Clang 14's CAPTURE cannot read one)
    CAPTURE(op);
    CHECK(ours.count(op) == 1);
  }
  CHECK(ours.size() > 150);
}

TEST_CASE("converters: a model's opset selects each operator's version, refused by name") {
  // opset 25: Add's newest version is 14, which is converted
  auto s = detail::select_converter("Add", 25);
  REQUIRE(s.row != nullptr);
  CHECK(s.version == 14);
  CHECK(s.row->first == 7);
  s = detail::select_converter("Add", 6);
  REQUIRE(s.row != nullptr);
  CHECK(s.version == 6);
  CHECK(s.row->first == 1);  // the legacy form's converter
  s = detail::select_converter("Softmax", 12);
  REQUIRE(s.row != nullptr);
  CHECK(s.version == 11);
  CHECK(s.row->last == 11);
  // a version between converted ones: Pad-1 (its `paddings` attribute)
  s = detail::select_converter("Pad", 1);
  CHECK(s.row == nullptr);
  CHECK(s.refusal ==
        "Pad-1 (the version opset 1 selects) is not handled; the importer converts Pad versions "
        "2, 11, 13, 18, 19, 21, 23, 24, 25");
  s = detail::select_converter("Det", 18);
  CHECK(s.row == nullptr);
  CHECK(s.version == 11);
  CHECK(s.refusal == "the importer converts no version of Det");
  s = detail::select_converter("QLinearConv", 9);
  CHECK(s.refusal == "QLinearConv does not exist in opset 9 (it came in opset 10)");
  s = detail::select_converter("Conv2D", 13);
  CHECK(s.refusal == "Conv2D is no operator of the default ONNX domain (opsets 1 to 28)");
}

// The text of docs/onnx.md's operator table, as operator_support() gives it.
std::string operator_table() {
  std::string out =
      "| ONNX operator | versions converted | ONNX's versions | becomes |\n| --- | --- | --- | --- "
      "|\n";
  for (const auto& o : importer::operator_support())
    if (!o.converted.empty())
      out += fmt::format("| {} | {} | {} | {} |\n", o.op, fmt::join(o.converted, ", "),
                         fmt::join(o.versions, ", "), o.becomes);
  return out;
}

TEST_CASE("converters: docs/onnx.md's operator table is operator_support()'s") {
  std::ifstream in(std::string(DLAVM_SOURCE_DIR) + "/docs/onnx.md");
  std::stringstream text;
  text << in.rdbuf();
  const std::string s = text.str();
  const std::string begin_mark =
      "<!-- operator table: generated from dlavm::onnx::operator_support() -->\n";
  const auto begin = s.find(begin_mark);
  const auto end = s.find("<!-- end of operator table -->");
  REQUIRE(begin != std::string::npos);
  REQUIRE(end != std::string::npos);
  const std::string documented =
      s.substr(begin + begin_mark.size(), end - begin - begin_mark.size());
  const std::string table = operator_table();
  {
    std::ofstream mine(std::string(DLAVM_BINARY_DIR) + "/onnx_operator_table.md");
    mine << table;
  }
  CHECK_MESSAGE(documented == table,
                "docs/onnx.md's operator table differs from "
                "operator_support(): build/onnx_operator_table.md has it");
}

TEST_CASE("converters: operator_support lists every operator, converted versions among ONNX's") {
  const auto all = importer::operator_support();
  CHECK(all.size() == 203);
  CHECK(std::is_sorted(all.begin(), all.end(),
                       [](const auto& a, const auto& b) { return a.op < b.op; }));
  for (const auto& o : all) {
    CAPTURE(o.op);
    CHECK(!o.versions.empty());
    for (const auto v : o.converted)
      CHECK(std::count(o.versions.begin(), o.versions.end(), v) == 1);
    CHECK(o.converted.empty() == o.becomes.empty());
  }
  const auto add =
      std::find_if(all.begin(), all.end(), [](const auto& o) { return o.op == "Add"; });
  REQUIRE(add != all.end());
  CHECK(add->versions == std::vector<std::int64_t>{1, 6, 7, 13, 14});
  CHECK(add->converted == add->versions);
}

}  // namespace onnx_converters_test

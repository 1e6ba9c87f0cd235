// Definitions for tune/record.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/tune/record.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <istream>
#include <ostream>
#include <set>
#include <utility>

namespace dlavm::tune {

namespace detail {

inline nlohmann::ordered_json record_json(const Record& r) {
  nlohmann::ordered_json j;
  j["workload"] = r.workload;
  nlohmann::ordered_json knobs = nlohmann::ordered_json::object();
  for (std::size_t k = 0; k < r.knobs.names.size(); ++k)
    knobs[r.knobs.names[k]] = r.knobs.values[k];
  j["knobs"] = std::move(knobs);
  j["cycles"] = r.cycles ? nlohmann::ordered_json(*r.cycles) : nlohmann::ordered_json(nullptr);
  j["bound_cycles"] = r.bound_cycles;
  j["dram_bytes"] = r.dram_bytes;
  j["build_seconds"] = r.build_seconds;
  j["error"] = r.error;
  return j;
}

template <class T, class Check>
T field(const nlohmann::ordered_json& j, const char* name, Check is, const char* kind) {
  const auto it = j.find(name);
  if (it == j.end()) raise<ParseError>("field '{}' is missing", name);
  if (!is(*it)) raise<ParseError>("field '{}' is not {}", name, kind);
  return it->template get<T>();
}

}  // namespace detail

DLAVM_INLINE std::string to_json_line(const Record& r) { return detail::record_json(r).dump(); }

DLAVM_INLINE Record parse_record(std::string_view line) {
  const auto j = nlohmann::ordered_json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object()) raise<ParseError>("not a JSON object");
  using J = nlohmann::ordered_json;
  Record r;
  r.workload = detail::field<std::string>(
      j, "workload", [](const J& v) { return v.is_string(); }, "a string");
  const auto knobs = j.find("knobs");
  if (knobs == j.end() || !knobs->is_object()) raise<ParseError>("field 'knobs' is not an object");
  for (const auto& [name, value] : knobs->items()) {
    if (!value.is_number_integer())
      raise<ParseError>("knob '{}' is {}, not an integer", name, value.dump());
    r.knobs.names.push_back(name);
    r.knobs.values.push_back(value.get<std::int64_t>());
  }
  const auto cycles = j.find("cycles");
  if (cycles == j.end()) raise<ParseError>("field 'cycles' is missing");
  if (!cycles->is_null()) {
    if (!cycles->is_number_integer() || cycles->get<std::int64_t>() < 0)
      raise<ParseError>("field 'cycles' is {}, not a count or null", cycles->dump());
    r.cycles = cycles->get<std::int64_t>();
  }
  if (const auto bound = j.find("bound_cycles"); bound != j.end()) {
    if (!bound->is_number_integer() || bound->get<std::int64_t>() < 0)
      raise<ParseError>("field 'bound_cycles' is {}, not a count", bound->dump());
    r.bound_cycles = bound->get<std::int64_t>();
  }
  r.dram_bytes = detail::field<std::int64_t>(
      j, "dram_bytes", [](const J& v) { return v.is_number_integer(); }, "an integer");
  r.build_seconds = detail::field<double>(
      j, "build_seconds", [](const J& v) { return v.is_number(); }, "a number");
  r.error = detail::field<std::string>(
      j, "error", [](const J& v) { return v.is_string(); }, "a string");
  if (!r.cycles && r.error.empty())
    raise<ParseError>("a record without cycles must say why in 'error'");
  return r;
}

DLAVM_INLINE void append(std::ostream& out, const Record& r) {
  out << to_json_line(r) << '\n';
  out.flush();
}

DLAVM_INLINE Log read_log(std::istream& in, std::string_view source) {
  Log log;
  std::string line;
  for (std::size_t number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      log.records.push_back(parse_record(line));
    } catch (const ParseError& e) {
      log.warnings.push_back(fmt::format("{}:{}: {}; line skipped", source, number, e.what()));
    }
  }
  return log;
}

DLAVM_INLINE Log read_log(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) raise<ValueError>("tuning log '{}' cannot be opened", path.string());
  return read_log(in, path.string());
}

DLAVM_INLINE std::string candidate_key(std::string_view workload, const graph::Knobs& knobs) {
  return fmt::format("{}\n{}", workload, to_string(knobs));
}

DLAVM_INLINE std::vector<Record> merge(std::span<const Log> logs) {
  std::vector<Record> out;
  std::set<std::string> seen;
  for (const auto& l : logs)
    for (const auto& r : l.records)
      if (seen.insert(candidate_key(r.workload, r.knobs)).second) out.push_back(r);
  return out;
}

DLAVM_INLINE std::map<std::string, std::vector<Record>> best(std::span<const Record> records,
                                                             std::size_t k) {
  std::map<std::string, std::vector<Record>> out;
  for (const auto& r : records)
    if (r.cycles) out[r.workload].push_back(r);
  for (auto& [w, rs] : out) {
    std::stable_sort(rs.begin(), rs.end(),
                     [](const Record& a, const Record& b) { return *a.cycles < *b.cycles; });
    if (rs.size() > k) rs.resize(k);
  }
  return out;
}

}  // namespace dlavm::tune

// Definitions for tune/record.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/ne/functor.hpp>
#include <dlavm/ne/printer.hpp>
#include <dlavm/tune/record.hpp>
#include <dlavm/vta/hw/read.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <fstream>
#include <istream>
#include <iterator>
#include <limits>
#include <ostream>
#include <set>
#include <tuple>
#include <utility>
#include <variant>

namespace dlavm::tune {

namespace detail {

// A record's line as read and written: keys in the order they are written.
using RecordJson = nlohmann::ordered_json;

// JSON text without exceptions: strings that are not UTF-8 are written with U+FFFD.
template <class J>
std::string dump_json(const J& j) {
  return j.dump(-1, ' ', false, J::error_handler_t::replace);
}

// ---- the workload as a JSON object ------------------------------------------------------------

inline constexpr std::array<const char*, 6> kStepKinds = {"add", "shr",         "max",
                                                          "min", "add_channel", "add_tensor"};
inline constexpr std::array<const char*, 3> kInputKinds = {"channel", "tensor", "channel_weights"};

// An integer, or a symbolic dim: its expression as ne prints it and each variable's range.
inline nlohmann::json dim_json(const ne::Expr& d) {
  if (const auto v = d.as_int()) return *v;
  nlohmann::json vars = nlohmann::json::object();
  for (const auto& v : ne::free_vars(d)) vars[v.name()] = nlohmann::json::array({v.min(), v.max()});
  nlohmann::json j = nlohmann::json::object();
  j["expr"] = ne::to_string(d);
  j["vars"] = std::move(vars);
  return j;
}

inline nlohmann::json type_json(const graph::TensorType& t) {
  nlohmann::json shape = nlohmann::json::array();
  for (const auto& d : t.shape) shape.push_back(dim_json(d));
  nlohmann::json j = nlohmann::json::object();
  j["shape"] = std::move(shape);
  j["dtype"] = t.dtype.str();
  return j;
}

// An attribute as JSON's own kind where that tells it apart: a dtype is {"dtype": "int8"} (not
// a string), a list of floats {"floats": [...]} (not an empty list of integers).
struct AttrJson {
  nlohmann::json operator()(std::int64_t v) const { return v; }
  nlohmann::json operator()(double v) const { return v; }
  nlohmann::json operator()(const std::string& v) const { return v; }
  nlohmann::json operator()(const std::vector<std::int64_t>& v) const { return v; }
  nlohmann::json operator()(DType v) const { return tagged("dtype", v.str()); }
  nlohmann::json operator()(const std::vector<double>& v) const { return tagged("floats", v); }
  static nlohmann::json tagged(const char* tag, nlohmann::json v) {
    nlohmann::json j = nlohmann::json::object();
    j[tag] = std::move(v);
    return j;
  }
};

inline nlohmann::json epilogue_json(const graph::Epilogue& e) {
  using Kind = graph::EpilogueStep::Kind;
  nlohmann::json steps = nlohmann::json::array(), inputs = nlohmann::json::array();
  for (const auto& s : e.steps) {
    nlohmann::json step = nlohmann::json::object();
    step["kind"] = kStepKinds[static_cast<std::size_t>(s.kind)];
    if (s.kind == Kind::AddChannel || s.kind == Kind::AddTensor)
      step["input"] = s.input;
    else
      step["imm"] = s.imm;
    steps.push_back(std::move(step));
  }
  for (const auto& in : e.inputs) {
    nlohmann::json input = nlohmann::json::object();
    input["kind"] = kInputKinds[static_cast<std::size_t>(in.kind)];
    input["dtype"] = in.dtype.str();
    inputs.push_back(std::move(input));
  }
  nlohmann::json j = nlohmann::json::object();
  j["steps"] = std::move(steps);
  j["inputs"] = std::move(inputs);
  j["int32_result"] = e.int32_result;
  return j;
}

// ---- reading: every field checked, ParseError naming it ---------------------------------------

// A value in a message: its JSON, cut after 40 characters.
inline std::string shown(const RecordJson& v) {
  std::string s = dump_json(v);
  return s.size() > 40 ? s.substr(0, 37) + "..." : s;
}

inline void expect(bool ok, std::string_view path, const RecordJson& v, std::string_view kind) {
  if (!ok) raise<ParseError>("field '{}' is {}, not {}", path, shown(v), kind);
}

// Member `name` of the object at `path` ("" for the line itself).
inline const RecordJson& member(const RecordJson& j, std::string_view path, const char* name) {
  const auto it = j.find(name);
  if (it == j.end())
    raise<ParseError>("field '{}{}{}' is missing", path, path.empty() ? "" : ".", name);
  return *it;
}

inline std::string sub(std::string_view path, const char* name) {
  return fmt::format("{}.{}", path, name);
}

// A non-negative integer that fits std::int64_t (JSON's non-negative integers read unsigned).
inline bool is_count(const RecordJson& v) {
  return v.is_number_unsigned() &&
         v.get<std::uint64_t>() <=
             static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
}

inline void check_dtype(const RecordJson& v, std::string_view path) {
  expect(v.is_string(), path, v, "a dtype");
  try {
    (void)DType::parse(v.get_ref<const std::string&>());
  } catch (const Error&) {
    expect(false, path, v, "a dtype (int8, int32, ...)");
  }
}

inline void check_dim(const RecordJson& d, std::string_view path) {
  if (d.is_number_integer()) return expect(is_count(d), path, d, "a dim");
  expect(d.is_object(), path, d, "a dim (an integer, or an object with \"expr\" and \"vars\")");
  const auto& expr = member(d, path, "expr");
  expect(expr.is_string() && !expr.get_ref<const std::string&>().empty(), sub(path, "expr"), expr,
         "an expression");
  const auto& vars = member(d, path, "vars");
  expect(vars.is_object(), sub(path, "vars"), vars, "an object of ranges");
  for (const auto& [name, range] : vars.items()) {
    const auto where = fmt::format("{}.vars.{}", path, name);
    expect(range.is_array() && range.size() == 2 && range[0].is_number_integer() &&
               range[1].is_number_integer() &&
               range[0].get<std::int64_t>() <= range[1].get<std::int64_t>(),
           where, range, "a range [min, max]");
  }
}

inline void check_type(const RecordJson& t, std::string_view path) {
  expect(t.is_object(), path, t, "a tensor type (an object with \"shape\" and \"dtype\")");
  const auto& shape = member(t, path, "shape");
  expect(shape.is_array(), sub(path, "shape"), shape, "an array of dims");
  for (std::size_t i = 0; i < shape.size(); ++i)
    check_dim(shape[i], fmt::format("{}.shape[{}]", path, i));
  check_dtype(member(t, path, "dtype"), sub(path, "dtype"));
}

inline void check_attr(const RecordJson& v, std::string_view path) {
  const auto all = [&](auto is) { return std::all_of(v.begin(), v.end(), is); };
  if (v.is_number() || v.is_string()) return;
  if (v.is_array())
    return expect(all([](const RecordJson& x) { return x.is_number_integer(); }), path, v,
                  "a list of integers");
  constexpr auto kind =
      "an attribute (a number, a string, a list of integers, "
      "{\"dtype\": ...} or {\"floats\": [...]})";
  expect(v.is_object() && v.size() == 1 && (v.contains("dtype") || v.contains("floats")), path, v,
         kind);
  if (v.contains("dtype")) return check_dtype(v["dtype"], sub(path, "dtype"));
  const auto& floats = v["floats"];
  expect(floats.is_array() && std::all_of(floats.begin(), floats.end(),
                                          [](const RecordJson& x) { return x.is_number(); }),
         sub(path, "floats"), floats, "a list of numbers");
}

// The index of `name` in `names`, or ParseError.
template <std::size_t N>
std::size_t kind_index(const RecordJson& v, std::string_view path,
                       const std::array<const char*, N>& names) {
  for (std::size_t i = 0; v.is_string() && i < N; ++i)
    if (v.get_ref<const std::string&>() == names[i]) return i;
  expect(false, path, v, fmt::format("one of {}", fmt::join(names, ", ")));
  return 0;
}

inline void check_epilogue(const RecordJson& e, std::string_view path) {
  expect(e.is_object(), path, e, "an epilogue (an object)");
  const auto& inputs = member(e, path, "inputs");
  expect(inputs.is_array(), sub(path, "inputs"), inputs, "an array");
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const auto where = fmt::format("{}.inputs[{}]", path, i);
    expect(inputs[i].is_object(), where, inputs[i], "an object");
    kind_index(member(inputs[i], where, "kind"), sub(where, "kind"), kInputKinds);
    check_dtype(member(inputs[i], where, "dtype"), sub(where, "dtype"));
  }
  const auto& steps = member(e, path, "steps");
  expect(steps.is_array(), sub(path, "steps"), steps, "an array");
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const auto where = fmt::format("{}.steps[{}]", path, i);
    expect(steps[i].is_object(), where, steps[i], "an object");
    const auto kind = static_cast<graph::EpilogueStep::Kind>(
        kind_index(member(steps[i], where, "kind"), sub(where, "kind"), kStepKinds));
    if (kind == graph::EpilogueStep::Kind::AddChannel ||
        kind == graph::EpilogueStep::Kind::AddTensor) {
      const auto& input = member(steps[i], where, "input");
      expect(is_count(input) && input.get<std::uint64_t>() < inputs.size(), sub(where, "input"),
             input, fmt::format("the index of one of the {} inputs", inputs.size()));
    } else {
      const auto& imm = member(steps[i], where, "imm");
      expect(imm.is_number_integer(), sub(where, "imm"), imm, "an integer");
    }
  }
  const auto& int32 = member(e, path, "int32_result");
  expect(int32.is_boolean(), sub(path, "int32_result"), int32, "true or false");
}

inline void check_workload(const RecordJson& w) {
  expect(w.is_object(), "workload", w, "an object (a workload)");
  const auto& op = member(w, "workload", "op");
  expect(op.is_string() && !op.get_ref<const std::string&>().empty(), "workload.op", op,
         "an op's name");
  const auto& args = member(w, "workload", "args");
  expect(args.is_array(), "workload.args", args, "an array of tensor types");
  for (std::size_t i = 0; i < args.size(); ++i)
    check_type(args[i], fmt::format("workload.args[{}]", i));
  check_type(member(w, "workload", "result"), "workload.result");
  const auto& attrs = member(w, "workload", "attrs");
  expect(attrs.is_object(), "workload.attrs", attrs, "an object");
  for (const auto& [key, value] : attrs.items()) check_attr(value, "workload.attrs." + key);
  check_epilogue(member(w, "workload", "epilogue"), "workload.epilogue");
}

// The line's format version; nullopt when it has no "version" field (version 1's lines).
inline std::optional<std::int64_t> format_version(const RecordJson& j) {
  const auto it = j.find("version");
  if (it == j.end()) return std::nullopt;
  expect(it->is_number_unsigned() && it->get<std::uint64_t>() >= 1, "version", *it,
         "a format version (an integer from 1)");
  return static_cast<std::int64_t>(
      std::min<std::uint64_t>(it->get<std::uint64_t>(), std::numeric_limits<std::int64_t>::max()));
}

// Why a line of another format version is not read, and what to do.
inline std::string other_version(std::optional<std::int64_t> version) {
  if (!version || *version < kRecordVersion)
    return fmt::format(
        "format version {}{}: written by a dlavm before records carried their target; tune again "
        "(this dlavm reads version {})",
        version.value_or(1), version ? "" : " (no \"version\" field)", kRecordVersion);
  return fmt::format(
      "format version {}: written by a newer dlavm (this one reads version {}); read it with "
      "that dlavm, or tune again",
      *version, kRecordVersion);
}

inline StrategyRevision strategy_of(const RecordJson& s, const RecordJson& workload_op) {
  expect(s.is_object(), "strategy", s, "an object with \"op\" and \"revision\"");
  const auto& op = member(s, "strategy", "op");
  expect(op.is_string(), "strategy.op", op, "an op's name");
  expect(op == workload_op, "strategy.op", op,
         fmt::format("the workload's op {}", shown(workload_op)));
  const auto& revision = member(s, "strategy", "revision");
  constexpr auto kMax = std::numeric_limits<int>::max(), kMin = std::numeric_limits<int>::min();
  expect(revision.is_number_integer() &&
             (revision.is_number_unsigned()
                  ? revision.get<std::uint64_t>() <= static_cast<std::uint64_t>(kMax)
                  : revision.get<std::int64_t>() >= kMin),
         "strategy.revision", revision, "a revision (an int)");
  return {op.get<std::string>(), revision.get<int>()};
}

inline vta::Config target_of(const RecordJson& t) {
  expect(t.is_object(), "target", t, "a VTA configuration (vta_config.json's object)");
  try {
    return vta::read_config(dump_json(t), "field 'target'");
  } catch (const ParseError&) {
    throw;
  } catch (const Error& e) {  // ConfigError: a configuration the hardware cannot realise
    throw ParseError(e.what());
  }
}

inline graph::Knobs knobs_of(const RecordJson& knobs) {
  expect(knobs.is_object(), "knobs", knobs, "an object of knob values");
  graph::Knobs k;
  for (const auto& [name, value] : knobs.items()) {
    if (!value.is_number_integer())
      raise<ParseError>("knob '{}' is {}, not an integer", name, shown(value));
    k.names.push_back(name);
    k.values.push_back(value.get<std::int64_t>());
  }
  return k;
}

inline std::int64_t count_of(const RecordJson& j, const char* name) {
  const auto& v = member(j, "", name);
  expect(is_count(v), name, v, "a count");
  return v.get<std::int64_t>();
}

// A line of format version 2 as a record.
inline Record record_of(const RecordJson& j) {
  Record r;
  const auto& workload = member(j, "", "workload");
  check_workload(workload);
  r.workload = dump_json(nlohmann::json(workload));  // sorted keys: the key
  r.strategy = strategy_of(member(j, "", "strategy"), workload["op"]);
  r.target = target_of(member(j, "", "target"));
  r.knobs = knobs_of(member(j, "", "knobs"));
  const auto& cycles = member(j, "", "cycles");
  expect(cycles.is_null() || is_count(cycles), "cycles", cycles, "a count or null");
  if (!cycles.is_null()) r.cycles = cycles.get<std::int64_t>();
  r.bound_cycles = count_of(j, "bound_cycles");
  r.dram_bytes = count_of(j, "dram_bytes");
  const auto& seconds = member(j, "", "build_seconds");
  expect(seconds.is_number(), "build_seconds", seconds, "a number");
  r.build_seconds = seconds.get<double>();
  const auto& error = member(j, "", "error");
  expect(error.is_string(), "error", error, "a string");
  r.error = error.get<std::string>();
  if (!r.cycles && r.error.empty())
    raise<ParseError>("a record without cycles must say why in 'error'");
  return r;
}

// The workload key back as the object a line holds; ValueError for text workload_key did not
// make.
inline RecordJson workload_object(const std::string& key) {
  auto j = RecordJson::parse(key, nullptr, false);
  try {
    if (j.is_discarded()) raise<ParseError>("not JSON");
    check_workload(j);
  } catch (const ParseError& e) {
    raise<ValueError>(
        "tuning record: its workload '{}' is not a workload key "
        "(tune::workload_key): {}",
        key.size() > 60 ? key.substr(0, 57) + "..." : key, e.what());
  }
  return j;
}

inline RecordJson record_json(const Record& r) {
  RecordJson j;
  j["version"] = kRecordVersion;
  j["strategy"] = {{"op", r.strategy.op}, {"revision", r.strategy.revision}};
  j["workload"] = workload_object(r.workload);
  // what parse_record would refuse is not written: a record must read back
  if (!j["workload"].contains("op") || j["workload"]["op"] != r.strategy.op)
    raise<ValueError>(
        "tuning record: its strategy is of op '{}' (revision {}), its workload of op {}; a "
        "record names the strategy of its workload's op",
        r.strategy.op, r.strategy.revision,
        j["workload"].contains("op") ? j["workload"]["op"].dump() : std::string("none"));
  RecordJson knobs = RecordJson::object();
  for (std::size_t k = 0; k < r.knobs.names.size() && k < r.knobs.values.size(); ++k)
    knobs[r.knobs.names[k]] = r.knobs.values[k];
  j["knobs"] = std::move(knobs);
  j["cycles"] = r.cycles ? RecordJson(*r.cycles) : RecordJson(nullptr);
  j["bound_cycles"] = r.bound_cycles;
  j["dram_bytes"] = r.dram_bytes;
  j["build_seconds"] = r.build_seconds;
  j["error"] = r.error;
  auto target = RecordJson::parse(r.target.to_json(), nullptr, false);
  if (target.is_discarded())
    raise<ValueError>("internal: vta::Config::to_json wrote no JSON for {}, please report",
                      r.target);
  j["target"] = std::move(target);
  return j;
}

// Lines of another format version: one warning per version, at its first line, with how
// many lines it has.
class OtherVersions {
 public:
  void note(std::optional<std::int64_t> version, std::string_view source, std::size_t line,
            std::vector<std::string>& warnings) {
    const auto [it, fresh] = seen_.try_emplace(version.value_or(0), Seen{warnings.size(), 0});
    if (fresh) warnings.push_back(fmt::format("{}:{}: {}", source, line, other_version(version)));
    ++it->second.lines;
  }
  void finish(std::vector<std::string>& warnings) const {
    for (const auto& [version, s] : seen_)
      warnings[s.warning] += s.lines == 1 ? "; line skipped"
                                          : fmt::format(
                                                "; this line and {} more of version {} "
                                                "skipped",
                                                s.lines - 1, version ? version : 1);
  }

 private:
  struct Seen {
    std::size_t warning, lines;
  };
  std::map<std::int64_t, Seen> seen_;  // by version, 0 for lines without one
};

}  // namespace detail

DLAVM_INLINE std::string workload_key(const graph::Workload& w) {
  nlohmann::json args = nlohmann::json::array(), attrs = nlohmann::json::object();
  for (const auto& t : w.args) args.push_back(detail::type_json(t));
  for (const auto& e : w.attrs) attrs[e.key] = std::visit(detail::AttrJson{}, e.value);
  nlohmann::json j = nlohmann::json::object();
  j["op"] = w.op;
  j["args"] = std::move(args);
  j["result"] = detail::type_json(w.result);
  j["attrs"] = std::move(attrs);
  j["epilogue"] = detail::epilogue_json(w.epilogue);
  return detail::dump_json(j);
}

DLAVM_INLINE std::string to_json_line(const Record& r) {
  return detail::dump_json(detail::record_json(r));
}

DLAVM_INLINE Record parse_record(std::string_view line) {
  const auto j = detail::RecordJson::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object()) raise<ParseError>("not a JSON object");
  const auto version = detail::format_version(j);
  if (version != kRecordVersion) raise<ParseError>("{}", detail::other_version(version));
  return detail::record_of(j);
}

DLAVM_INLINE void append(std::ostream& out, const Record& r) {
  out << to_json_line(r) << '\n';
  out.flush();
}

DLAVM_INLINE AppendLog open_for_append(const std::filesystem::path& path) {
  AppendLog log;
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (!ec && size > 0) {
    // the bytes after the last newline: a record a killed run did not finish
    std::ifstream in(path, std::ios::binary);
    if (!in) raise<ValueError>("tuning log '{}' cannot be opened", path.string());
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto newline = text.rfind('\n');
    const std::size_t keep = newline == std::string::npos ? 0 : newline + 1;
    if (keep < text.size()) {
      std::filesystem::resize_file(path, keep, ec);
      if (ec)
        raise<ValueError>("tuning log '{}': cannot cut its partial last line: {}", path.string(),
                          ec.message());
      log.repair = fmt::format("'{}': cut {} bytes, a last line without its newline", path.string(),
                               text.size() - keep);
    }
  }
  log.out.open(path, std::ios::app);
  if (!log.out) raise<ValueError>("tuning log '{}' cannot be opened for writing", path.string());
  return log;
}

DLAVM_INLINE Log read_log(std::istream& in, std::string_view source) {
  Log log;
  detail::OtherVersions others;
  std::string line;
  for (std::size_t number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      const auto j = detail::RecordJson::parse(line, nullptr, false);
      if (j.is_discarded() || !j.is_object()) raise<ParseError>("not a JSON object");
      const auto version = detail::format_version(j);
      if (version != kRecordVersion) {
        others.note(version, source, number, log.warnings);
        continue;
      }
      log.records.push_back(detail::record_of(j));
    } catch (const ParseError& e) {
      log.warnings.push_back(fmt::format("{}:{}: {}; line skipped", source, number, e.what()));
    }
  }
  others.finish(log.warnings);
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

DLAVM_INLINE std::string config_difference(const vta::Config& logged, const vta::Config& here) {
  using C = vta::Config;
  static constexpr std::pair<const char*, int C::*> kFields[] = {
      {"LOG_INP_WIDTH", &C::log_inp_width},
      {"LOG_WGT_WIDTH", &C::log_wgt_width},
      {"LOG_ACC_WIDTH", &C::log_acc_width},
      {"LOG_OUT_WIDTH", &C::log_out_width},
      {"LOG_BATCH", &C::log_batch},
      {"LOG_BLOCK_IN", &C::log_block_in},
      {"LOG_BLOCK_OUT", &C::log_block_out},
      {"LOG_UOP_BUFF_SIZE", &C::log_uop_buff_size},
      {"LOG_INP_BUFF_SIZE", &C::log_inp_buff_size},
      {"LOG_WGT_BUFF_SIZE", &C::log_wgt_buff_size},
      {"LOG_ACC_BUFF_SIZE", &C::log_acc_buff_size},
      {"LOG_BUS_WIDTH", &C::log_bus_width}};
  std::vector<std::string> out;
  if (logged.target != here.target)
    out.push_back(fmt::format("TARGET \"{}\" in the log, \"{}\" here", logged.target, here.target));
  if (logged.hw_ver != here.hw_ver)
    out.push_back(fmt::format("HW_VER \"{}\" in the log, \"{}\" here", logged.hw_ver, here.hw_ver));
  for (const auto& [key, field] : kFields)
    if (logged.*field != here.*field)
      out.push_back(fmt::format("{} {} in the log, {} here", key, logged.*field, here.*field));
  return fmt::format("{}", fmt::join(out, "; "));
}

DLAVM_INLINE std::vector<Record> merge(std::span<const Log> logs) {
  std::vector<Record> out;
  std::set<std::string> seen;
  for (const auto& l : logs)
    for (const auto& r : l.records)
      if (seen.insert(fmt::format("{}\n{} {}\n{}", candidate_key(r.workload, r.knobs),
                                  r.strategy.op, r.strategy.revision, r.target.to_json()))
              .second)
        out.push_back(r);
  return out;
}

DLAVM_INLINE std::map<std::string, std::vector<Record>> best(std::span<const Record> records,
                                                             std::size_t k) {
  std::map<std::string, std::vector<Record>> out;
  for (const auto& r : records)
    if (r.cycles) out[r.workload].push_back(r);
  // the order of equal cycles: what the records are, never where they stand
  const auto tie_key = [](const Record& r) {
    return std::tuple{to_string(r.knobs), r.target.to_json(), r.strategy.revision};
  };
  for (auto& [w, rs] : out) {
    std::stable_sort(rs.begin(), rs.end(), [&](const Record& a, const Record& b) {
      if (*a.cycles != *b.cycles) return *a.cycles < *b.cycles;
      return tie_key(a) < tie_key(b);
    });
    if (rs.size() > k) rs.resize(k);
  }
  return out;
}

}  // namespace dlavm::tune

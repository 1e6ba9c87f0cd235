// Definitions for tune/config.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/tune/config.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <utility>

namespace dlavm::tune {

namespace detail {

// A char iterator over the config's text that counts the newlines it has passed: JSON's
// parser reads through it, so when the parser reports a key, *line is the key's line (the
// lexer has just read the key's closing quote and nothing past it).
struct LineCountingIterator {
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;
  const char* at = nullptr;
  std::size_t* line = nullptr;
  reference operator*() const { return *at; }
  LineCountingIterator& operator++() {
    if (*at == '\n') ++*line;
    ++at;
    return *this;
  }
  LineCountingIterator operator++(int) {
    auto old = *this;
    ++*this;
    return old;
  }
  friend bool operator==(const LineCountingIterator& a, const LineCountingIterator& b) {
    return a.at == b.at;
  }
};

// A key's path as one string: its keys from the root, each followed by '\x1f'.
template <class Keys>
std::string key_path(const Keys& keys) {
  std::string out;
  for (const auto& k : keys) out.append(k).push_back('\x1f');
  return out;
}

// The line of every object key, by its path (key_path), from a SAX pass.
class KeyLines : public nlohmann::json_sax<nlohmann::json> {
 public:
  explicit KeyLines(const std::size_t* line) : line_(line) {}
  std::map<std::string, std::size_t> lines;

  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override {
    path_.emplace_back();
    return true;
  }
  bool key(string_t& k) override {
    path_.back() = k;
    lines.emplace(key_path(path_), *line_);
    return true;
  }
  bool end_object() override {
    path_.pop_back();
    return true;
  }
  // arrays hold knob values only: they need no lines of their own
  bool start_array(std::size_t) override {
    path_.emplace_back();
    return true;
  }
  bool end_array() override {
    path_.pop_back();
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }

 private:
  const std::size_t* line_;
  std::vector<std::string> path_;
};

inline std::size_t line_of_byte(std::string_view text, std::size_t byte) {
  const auto end = text.begin() + static_cast<std::ptrdiff_t>(std::min(byte, text.size()));
  return 1 + static_cast<std::size_t>(std::count(text.begin(), end, '\n'));
}

// The entries of "ops" or "workloads": each key an op or workload, each value an object of
// knobs, each knob a non-empty array of integers.
inline std::vector<ConfigEntry> config_entries(const nlohmann::ordered_json& section,
                                               std::string_view field,
                                               const std::map<std::string, std::size_t>& lines,
                                               std::string_view source) {
  const auto line = [&](std::initializer_list<std::string_view> path) -> std::size_t {
    const auto it = lines.find(key_path(path));
    return it == lines.end() ? 0 : it->second;
  };
  if (!section.is_object())
    raise<ParseError>("{}:{}: '{}' is {}, not an object", source, line({field}), field,
                      section.type_name());
  std::vector<ConfigEntry> out;
  for (const auto& [key, knobs] : section.items()) {
    ConfigEntry e{.key = key, .line = line({field, key})};
    if (!knobs.is_object())
      raise<ParseError>("{}:{}: {}: its knobs are {}, not an object", source, e.line, key,
                        knobs.type_name());
    for (const auto& [name, values] : knobs.items()) {
      const std::size_t at = line({field, key, name});
      const bool integers = values.is_array() && !values.empty() &&
                            std::all_of(values.begin(), values.end(),
                                        [](const auto& v) { return v.is_number_integer(); });
      if (!integers)
        raise<ParseError>("{}:{}: {}: knob '{}' is {}, not a non-empty array of integers", source,
                          at, key, name, values.dump());
      e.knobs.push_back({name, values.get<std::vector<std::int64_t>>()});
      e.knob_lines.push_back(at);
    }
    out.push_back(std::move(e));
  }
  return out;
}

inline std::string where(const TuningConfig& c, std::size_t line) {
  return line ? fmt::format("{}:{}", c.source, line) : c.source;
}

inline std::string knob_where(const TuningConfig& c, const ConfigEntry& e, std::size_t k) {
  return where(c, k < e.knob_lines.size() ? e.knob_lines[k] : e.line);
}

// The index of knob `name` in the task's space, or nullopt.
inline std::optional<std::size_t> find_knob(const Task& task, std::string_view name) {
  const auto& knobs = task.space.knobs;
  for (std::size_t i = 0; i < knobs.size(); ++i)
    if (knobs[i].name == name) return i;
  return std::nullopt;
}

// The index of the entry's knob k in the task's space; ValueError listing the space's knobs.
inline std::size_t knob_index(const TuningConfig& c, const ConfigEntry& e, std::size_t k,
                              const Task& task) {
  if (const auto i = find_knob(task, e.knobs[k].name)) return *i;
  const auto& knobs = task.space.knobs;
  std::vector<std::string_view> names;
  for (const auto& knob : knobs) names.push_back(knob.name);
  raise<ValueError>("{}: {}: '{}' is not a knob of {}'s space ({})", knob_where(c, e, k), e.key,
                    e.knobs[k].name, task.workload.op, fmt::join(names, ", "));
}

// The values of `domain` that `wanted` lists, in the domain's order.
inline std::vector<std::int64_t> kept_values(std::span<const std::int64_t> domain,
                                             std::span<const std::int64_t> wanted) {
  std::vector<std::int64_t> out;
  for (const auto v : domain)
    if (std::find(wanted.begin(), wanted.end(), v) != wanted.end()) out.push_back(v);
  return out;
}

}  // namespace detail

DLAVM_INLINE TuningConfig parse_config(std::string_view text, std::string_view source) {
  TuningConfig c{.source = std::string(source)};
  const auto root = nlohmann::ordered_json::parse(text, nullptr, false);
  if (root.is_discarded()) {
    // parse again for the position and the parser's own account of what is wrong
    try {
      const auto again = nlohmann::ordered_json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
      std::string what = e.what();
      if (const auto colon = what.find(": "); colon != std::string::npos) what.erase(0, colon + 2);
      raise<ParseError>("{}:{}: not JSON: {}", source, detail::line_of_byte(text, e.byte), what);
    }
  }
  std::size_t line = 1;
  detail::KeyLines key_lines(&line);
  nlohmann::json::sax_parse(detail::LineCountingIterator{text.data(), &line},
                            detail::LineCountingIterator{text.data() + text.size(), &line},
                            &key_lines);
  if (!root.is_object())
    raise<ParseError>("{}:1: a tuning config is an object with 'ops' and 'workloads', not {}",
                      source, root.type_name());
  for (const auto& [field, section] : root.items()) {
    if (field == "ops") {
      c.ops = detail::config_entries(section, field, key_lines.lines, source);
    } else if (field == "workloads") {
      c.workloads = detail::config_entries(section, field, key_lines.lines, source);
    } else {
      raise<ParseError>(
          "{}:{}: unknown field '{}' (a tuning config has 'ops' and 'workloads')", source,
          key_lines.lines[detail::key_path(std::initializer_list<std::string_view>{field})], field);
    }
  }
  return c;
}

DLAVM_INLINE TuningConfig read_config(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) raise<ValueError>("tuning config '{}' cannot be opened", path.string());
  std::ostringstream text;
  text << in.rdbuf();
  return parse_config(text.str(), path.string());
}

DLAVM_INLINE std::string to_json(const TuningConfig& config) {
  const auto section = [](std::string& out, std::string_view field,
                          const std::vector<ConfigEntry>& entries) {
    out += fmt::format("  \"{}\": {{", field);
    for (std::size_t i = 0; i < entries.size(); ++i) {
      out += fmt::format("{}\n    {}: {{", i ? "," : "", nlohmann::json(entries[i].key).dump());
      const auto& knobs = entries[i].knobs;
      for (std::size_t k = 0; k < knobs.size(); ++k)
        out += fmt::format("{}\n      {}: [{}]", k ? "," : "", nlohmann::json(knobs[k].name).dump(),
                           fmt::join(knobs[k].values, ", "));
      out += knobs.empty() ? "}" : "\n    }";
    }
    out += entries.empty() ? "}" : "\n  }";
  };
  std::string out = "{\n";
  section(out, "ops", config.ops);
  out += ",\n";
  section(out, "workloads", config.workloads);
  out += "\n}\n";
  return out;
}

DLAVM_INLINE TuningConfig config_of(std::span<const Task> tasks) {
  TuningConfig c;
  for (const auto& t : tasks) c.workloads.push_back({.key = t.name, .knobs = t.space.knobs});
  return c;
}

DLAVM_INLINE std::vector<std::string> restrict(std::span<Task> tasks, const TuningConfig& config) {
  // every value is checked against the strategy's own domain, whatever entries narrowed first
  std::vector<std::vector<graph::Knob>> domains;
  for (const auto& t : tasks) domains.push_back(t.space.knobs);
  const auto contains = [](std::span<const std::int64_t> values, std::int64_t v) {
    return std::find(values.begin(), values.end(), v) != values.end();
  };
  std::vector<std::string> unused;
  // an op's entry: intersected with each workload's domain; a value no workload has is a typo
  for (const auto& e : config.ops) {
    const auto of_op = [&](const Task& t) { return t.workload.op == e.key; };
    if (std::none_of(tasks.begin(), tasks.end(), of_op)) {
      unused.push_back(
          fmt::format("{}: op '{}' has no workload here", detail::where(config, e.line), e.key));
      continue;
    }
    for (std::size_t k = 0; k < e.knobs.size(); ++k) {
      const auto& wanted = e.knobs[k].values;
      // the op's workloads whose spaces have the knob (conv2d's `strided`: 1x1 kernels with
      // strides only); none is an unknown knob
      const auto with_knob = [&](const Task& t) {
        return of_op(t) && detail::find_knob(t, e.knobs[k].name).has_value();
      };
      if (std::none_of(tasks.begin(), tasks.end(), with_knob))
        (void)detail::knob_index(config, e, k, *std::find_if(tasks.begin(), tasks.end(), of_op));
      // a value in no workload's own domain first: the message for a typo
      for (const auto v : wanted) {
        bool somewhere = false;
        for (std::size_t t = 0; t < tasks.size(); ++t)
          if (with_knob(tasks[t]))
            somewhere =
                somewhere ||
                contains(domains[t][*detail::find_knob(tasks[t], e.knobs[k].name)].values, v);
        if (!somewhere)
          raise<ValueError>("{}: {}: knob '{}' = {} is in the domain of none of its workloads",
                            detail::knob_where(config, e, k), e.key, e.knobs[k].name, v);
      }
      for (auto& task : tasks) {
        if (!with_knob(task)) continue;
        auto& knob = task.space.knobs[*detail::find_knob(task, e.knobs[k].name)];
        auto kept = detail::kept_values(knob.values, wanted);
        if (kept.empty())
          raise<ValueError>("{}: {}: knob '{}' keeps none of [{}] for {} (its values: {})",
                            detail::knob_where(config, e, k), e.key, knob.name,
                            fmt::join(wanted, ", "), task.name, fmt::join(knob.values, ", "));
        knob.values = std::move(kept);
      }
    }
  }
  // a workload's entry: every value must be of that workload's domain
  for (const auto& e : config.workloads) {
    const auto task =
        std::find_if(tasks.begin(), tasks.end(), [&](const Task& t) { return t.name == e.key; });
    if (task == tasks.end()) {
      unused.push_back(
          fmt::format("{}: no workload '{}' here", detail::where(config, e.line), e.key));
      continue;
    }
    const auto t = static_cast<std::size_t>(task - tasks.begin());
    for (std::size_t k = 0; k < e.knobs.size(); ++k) {
      const std::size_t i = detail::knob_index(config, e, k, *task);
      const auto& domain = domains[t][i].values;
      for (const auto v : e.knobs[k].values)
        if (!contains(domain, v))
          raise<ValueError>("{}: {}: knob '{}' = {} is outside its domain ({})",
                            detail::knob_where(config, e, k), e.key, e.knobs[k].name, v,
                            fmt::join(domain, ", "));
      auto& knob = task->space.knobs[i];
      auto kept = detail::kept_values(knob.values, e.knobs[k].values);
      if (kept.empty())
        raise<ValueError>("{}: {}: knob '{}' keeps none of [{}] (the op's entry left {})",
                          detail::knob_where(config, e, k), e.key, knob.name,
                          fmt::join(e.knobs[k].values, ", "), fmt::join(knob.values, ", "));
      knob.values = std::move(kept);
    }
  }
  return unused;
}

}  // namespace dlavm::tune

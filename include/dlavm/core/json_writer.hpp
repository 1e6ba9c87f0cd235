// JsonWriter: writes a JSON document front to back, laid out as nlohmann::json::dump(indent)
// lays it out. The files dlavm writes (vta_config.json, manifest.json, Chrome traces) go
// through it; nlohmann/json stays the reader (vta/hw/json.hpp), so that writing a file does not
// compile nlohmann's value type, serializer and number printer into every unit that can write
// one.
//
//   detail::JsonWriter w(2);
//   w.begin_object();
//   w.field("name", "A");          // strings are escaped; text must be UTF-8
//   w.field("bytes", 1024);
//   w.key("dims");
//   w.begin_array();
//   w.value(16);
//   w.end_array();
//   w.end_object();
//   std::string text = std::move(w).str();
#pragma once

#include <dlavm/core/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dlavm::detail {

class JsonWriter {
 public:
  // Spaces per nesting level, as dump(indent): a line per member, or with a negative indent
  // the whole document on one line without spaces (dump(-1)).
  explicit JsonWriter(int indent = 2) : indent_(indent) {}

  void begin_object() { open('{'); }
  void end_object() { close('}'); }
  void begin_array() { open('['); }
  void end_array() { close(']'); }

  // The key of the next member of the innermost object.
  void key(std::string_view k) {
    separate();
    quote(k);
    out_ += indent_ < 0 ? ":" : ": ";
    after_key_ = true;
  }

  void value(std::string_view s) {
    separate();
    quote(s);
  }
  void value(const char* s) { value(std::string_view(s)); }
  void value(const std::string& s) { value(std::string_view(s)); }
  void value(bool b) {
    separate();
    out_ += b ? "true" : "false";
  }
  template <std::integral T>
  requires(!std::same_as<T, bool>) void value(T v) {
    separate();
    const fmt::format_int digits(v);
    out_.append(digits.data(), digits.size());
  }

  template <class T>
  void field(std::string_view k, const T& v) {
    key(k);
    value(v);
  }

  // The document; every container must be closed.
  std::string str() && { return std::move(out_); }

 private:
  void open(char bracket) {
    separate();
    out_ += bracket;
    counts_.push_back(0);
  }
  void close(char bracket) {
    const std::size_t members = counts_.back();
    counts_.pop_back();
    if (members > 0) newline();
    out_ += bracket;
  }
  // Before a value or a key: the comma and line break that separate it from the one before,
  // unless it is the value of the key just written.
  void separate() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (counts_.empty()) return;
    if (counts_.back()++ > 0) out_ += ',';
    newline();
  }
  void newline() {
    if (indent_ < 0) return;
    out_ += '\n';
    out_.append(counts_.size() * static_cast<std::size_t>(indent_), ' ');
  }
  // A JSON string: quotes, backslashes and control characters escaped. JSON text is UTF-8, so
  // a string that is not (a byte-mangled name) is refused rather than written unreadable.
  void quote(std::string_view s) {
    check_utf8(s);
    out_ += '"';
    for (const char c : s) {
      switch (c) {
        case '"':
          out_ += "\\\"";
          break;
        case '\\':
          out_ += "\\\\";
          break;
        case '\b':
          out_ += "\\b";
          break;
        case '\f':
          out_ += "\\f";
          break;
        case '\n':
          out_ += "\\n";
          break;
        case '\r':
          out_ += "\\r";
          break;
        case '\t':
          out_ += "\\t";
          break;
        default:
          if (static_cast<unsigned char>(c) < 0x20)
            out_ += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
          else
            out_ += c;
      }
    }
    out_ += '"';
  }
  static void check_utf8(std::string_view s) {
    for (std::size_t k = 0; k < s.size();) {
      const auto lead = static_cast<unsigned char>(s[k]);
      const std::size_t len = lead < 0x80           ? 1
                              : (lead >> 5) == 0x6  ? 2
                              : (lead >> 4) == 0xe  ? 3
                              : (lead >> 3) == 0x1e ? 4
                                                    : 0;
      bool ok = len > 0 && k + len <= s.size();
      for (std::size_t j = 1; ok && j < len; ++j)
        ok = (static_cast<unsigned char>(s[k + j]) >> 6) == 0x2;
      if (!ok)
        raise<ValueError>(
            "JSON text must be UTF-8: the string starting \"{}\" has an invalid byte 0x{:02x} "
            "at offset {}",
            s.substr(0, std::min<std::size_t>(k, 40)), lead, k);
      k += len;
    }
  }

  int indent_;
  std::string out_;
  std::vector<std::size_t> counts_;  // members written so far in each open container
  bool after_key_ = false;
};

}  // namespace dlavm::detail

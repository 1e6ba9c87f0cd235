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
    check_utf8(k);
    separate();
    append_quoted(out_, k);
    out_ += indent_ < 0 ? ":" : ": ";
    after_key_ = true;
  }

  void value(std::string_view s) {
    check_utf8(s);
    separate();
    append_quoted(out_, s);
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
  // Numbers are integers here; a floating-point value, an enum or another pointer would
  // otherwise convert to bool and print as true or false.
  void value(double) = delete;
  template <class T>
  void value(const T*) = delete;

  template <class T>
  void field(std::string_view k, const T& v) {
    key(k);
    value(v);
  }

  // The document. Raises ValueError if a container is still open.
  std::string str() && {
    if (!counts_.empty())
      raise<ValueError>("JsonWriter: {} container(s) still open at the end of the document",
                        counts_.size());
    return std::move(out_);
  }

 private:
  void open(char bracket) {
    separate();
    out_ += bracket;
    counts_.push_back(0);
  }
  void close(char bracket) {
    if (counts_.empty())
      raise<ValueError>("JsonWriter: '{}' closes a container that is not open", bracket);
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
  // A JSON string: quotes, backslashes and control characters escaped, as nlohmann escapes
  // them (lowercase \u00xx; '/' and DEL as they are).
  static void append_quoted(std::string& out, std::string_view s) {
    out += '"';
    for (const char c : s) {
      switch (c) {
        case '"':
          out += "\\\"";
          break;
        case '\\':
          out += "\\\\";
          break;
        case '\b':
          out += "\\b";
          break;
        case '\f':
          out += "\\f";
          break;
        case '\n':
          out += "\\n";
          break;
        case '\r':
          out += "\\r";
          break;
        case '\t':
          out += "\\t";
          break;
        default:
          if (static_cast<unsigned char>(c) < 0x20)
            out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
          else
            out += c;
      }
    }
    out += '"';
  }
  // JSON text is UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF),
  // and nlohmann's reader refuses anything else: a string that is not is refused here, before
  // anything of it is written, rather than written into a file that cannot be read back.
  static void check_utf8(std::string_view s) {
    for (std::size_t k = 0; k < s.size();) {
      const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
      const unsigned lead = byte(k);
      // The sequence's length and the range of its second byte, by lead byte.
      std::size_t len = 0;
      unsigned lo = 0x80, hi = 0xbf;
      if (lead < 0x80) {
        len = 1;
      } else if (lead >= 0xc2 && lead <= 0xdf) {
        len = 2;
      } else if (lead >= 0xe0 && lead <= 0xef) {
        len = 3;
        if (lead == 0xe0) lo = 0xa0;  // overlong below U+0800
        if (lead == 0xed) hi = 0x9f;  // surrogates U+D800..DFFF
      } else if (lead >= 0xf0 && lead <= 0xf4) {
        len = 4;
        if (lead == 0xf0) lo = 0x90;  // overlong below U+10000
        if (lead == 0xf4) hi = 0x8f;  // above U+10FFFF
      }
      std::size_t bad = k;  // the offset of the first byte that breaks the sequence
      bool ok = len > 0;
      for (std::size_t j = 1; ok && j < len; ++j) {
        bad = k + j;
        const unsigned lo_j = j == 1 ? lo : 0x80, hi_j = j == 1 ? hi : 0xbf;
        ok = k + j < s.size() && byte(k + j) >= lo_j && byte(k + j) <= hi_j;
      }
      if (!ok) {
        std::string prefix;
        append_quoted(prefix, s.substr(0, std::min<std::size_t>(k, 40)));
        if (bad >= s.size())
          raise<ValueError>(
              "JSON text must be UTF-8: the string starting {} ends inside a character that "
              "begins at offset {}",
              prefix, k);
        raise<ValueError>(
            "JSON text must be UTF-8: the string starting {} has an invalid byte 0x{:02x} at "
            "offset {}",
            prefix, byte(bad), bad);
      }
      k += len;
    }
  }

  int indent_;
  std::string out_;
  std::vector<std::size_t> counts_;  // members written so far in each open container
  bool after_key_ = false;
};

}  // namespace dlavm::detail

// Internal: the one JSON document type of the VTA layer and the one way every reader parses
// untrusted text. Included by definition files (-inl.hpp) only, so that nlohmann/json stays out
// of the headers that declare the API, and by vta/hw/read-inl.hpp only, so that it stays out of
// every unit that does not read a file. Files are written with core/json_writer.hpp.
//
// parse_json(text, source) is the only entry for files a user hands us (vta_config.json,
// manifest.json): it never lets a nlohmann exception out (a syntax error, a number outside
// double range such as 1e400, a duplicate key all become ParseError naming the file and the
// byte or key), and it refuses documents nested deeper than kMaxJsonDepth before the parser
// sees them, so nothing recursive (dump, copy, compare) ever meets a deep document. Messages
// show untrusted values through describe(), which is bounded whatever the value.
//
//   const auto j = detail::parse_json(text, "vta_config.json");   // or raises ParseError
//   raise<ParseError>("{}: LOG_BATCH must be an integer, got {}", src, detail::describe(v));
#pragma once

#include <dlavm/core/error.hpp>
#include <dlavm/vta/hw/excerpt.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dlavm::vta::detail {

// The one JSON document type of the VTA layer: nlohmann::ordered_json keeps keys in insertion
// order (written files list them in a fixed order), and reading with the same type and the
// same input (a character range) keeps nlohmann's parser and value code instantiated once.
using Json = nlohmann::ordered_json;

// The deepest nesting a VTA file may have. The formats need 3 levels; the bound is far above
// that and far below what recursion over a document can survive.
inline constexpr int kMaxJsonDepth = 64;

// A short, bounded description of a value for messages: scalars as written (strings cut
// by excerpt), containers by kind and size. Never recursive.
inline std::string describe(const Json& v) {
  switch (v.type()) {
    case Json::value_t::object:
      return fmt::format("an object of {} keys", v.size());
    case Json::value_t::array:
      return fmt::format("an array of {} elements", v.size());
    case Json::value_t::string:
      return fmt::format("\"{}\"", excerpt(v.get_ref<const Json::string_t&>()));
    case Json::value_t::binary:
      return "binary data";
    case Json::value_t::discarded:
      return "nothing";
    default:
      return v.dump();  // null, boolean, number: a few characters
  }
}

// The byte offset at which `text` opens its (kMaxJsonDepth + 1)-th nested container, or npos.
// Brackets inside strings do not count; a string ends at an unescaped quote, as the JSON lexer
// ends it, so the parser can never nest deeper than this scan saw at the same byte.
inline std::size_t too_deep_at(std::string_view text) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) return i;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return std::string_view::npos;
}

// nlohmann SAX handler that builds the document (as nlohmann's own DOM parser does) and keeps
// the first error instead of throwing it: the byte offset and message of a syntax error or a
// number overflow, or the key that an object repeats.
class JsonBuilder {
 public:
  Json root;
  std::string error;  // empty while the document is well formed
  std::size_t error_byte = std::string_view::npos;

  bool null() { return put(Json(nullptr)); }
  bool boolean(bool v) { return put(Json(v)); }
  bool number_integer(Json::number_integer_t v) { return put(Json(v)); }
  bool number_unsigned(Json::number_unsigned_t v) { return put(Json(v)); }
  bool number_float(Json::number_float_t v, const Json::string_t&) { return put(Json(v)); }
  bool string(Json::string_t& v) { return put(Json(std::move(v))); }
  bool binary(Json::binary_t& v) { return put(Json::binary(std::move(v))); }
  bool start_object(std::size_t) { return open(Json::object()); }
  bool start_array(std::size_t) { return open(Json::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool key(Json::string_t& k) {
    if (stack_.back()->contains(k)) {
      error = fmt::format("duplicate key \"{}\"", excerpt(k));
      return false;
    }
    key_ = std::move(k);
    return true;
  }
  bool parse_error(std::size_t byte, const std::string&, const Json::exception& e) {
    // nlohmann's message quotes the last token read, which may be a whole long string.
    error = excerpt(e.what(), 160);
    error_byte = byte;
    return false;
  }

 private:
  // Places a value where the parser is: the root, the next array element, or the value of the
  // key just read. Children of the open container are complete before the next one is added,
  // so the pointers on the stack (the open containers) stay valid.
  Json* place(Json v) {
    if (stack_.empty()) {
      root = std::move(v);
      return &root;
    }
    Json& top = *stack_.back();
    if (top.is_array()) {
      top.push_back(std::move(v));
      return &top.back();
    }
    return &(top[key_] = std::move(v));
  }
  bool put(Json v) {
    place(std::move(v));
    return true;
  }
  bool open(Json v) {
    stack_.push_back(place(std::move(v)));
    return true;
  }
  bool close() {
    stack_.pop_back();
    return true;
  }

  std::vector<Json*> stack_;
  std::string key_;
};

// Parses untrusted JSON text; raises ParseError naming `source` and the byte offset (syntax
// errors, numbers outside double range, nesting deeper than kMaxJsonDepth) or the key (a key
// repeated in one object).
inline Json parse_json(std::string_view text, std::string_view source) {
  if (const auto at = too_deep_at(text); at != std::string_view::npos)
    raise<ParseError>("{}: invalid JSON at byte {}: nested deeper than {} levels", source, at,
                      kMaxJsonDepth);
  JsonBuilder b;
  bool ok = false;
  try {
    ok = Json::sax_parse(text.begin(), text.end(), &b);
  } catch (const Json::exception& e) {  // not expected: the builder reports errors itself
    raise<ParseError>("{}: invalid JSON: {}", source, excerpt(e.what(), 160));
  }
  if (!ok && b.error_byte != std::string_view::npos)
    raise<ParseError>("{}: invalid JSON at byte {}: {}", source, b.error_byte, b.error);
  if (!ok) raise<ParseError>("{}: invalid JSON: {}", source, b.error);
  return std::move(b.root);
}

}  // namespace dlavm::vta::detail

// JsonWriter against nlohmann::json's dump, the layout it reproduces: random documents (nested
// objects and arrays, strings with every escape, integers at the ends of their ranges) written
// through the writer must read back equal and print byte for byte as dump(indent) prints them.
#include <dlavm/core/json_writer.hpp>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <limits>
#include <random>
#include <string>

using dlavm::detail::JsonWriter;
using Json = nlohmann::ordered_json;

namespace {

void write(JsonWriter& w, const Json& j) {
  if (j.is_object()) {
    w.begin_object();
    for (const auto& [k, v] : j.items()) {
      w.key(k);
      write(w, v);
    }
    w.end_object();
  } else if (j.is_array()) {
    w.begin_array();
    for (const auto& v : j) write(w, v);
    w.end_array();
  } else if (j.is_string()) {
    w.value(j.get<std::string>());
  } else if (j.is_boolean()) {
    w.value(j.get<bool>());
  } else if (j.is_number_unsigned()) {
    w.value(j.get<std::uint64_t>());
  } else {
    w.value(j.get<std::int64_t>());
  }
}

std::string random_string(std::mt19937& rng) {
  // Plain letters, every character JSON escapes, DEL, and multi-byte UTF-8.
  static const std::string pieces[] = {"a",
                                       "Z",
                                       "_",
                                       " ",
                                       "\"",
                                       "\\",
                                       "/",
                                       "\b",
                                       "\f",
                                       "\n",
                                       "\r",
                                       "\t",
                                       std::string(1, '\0'),
                                       "\x01",
                                       "\x1f",
                                       "\x7f",
                                       "\xc3\xa9",
                                       "\xe2\x82\xac",
                                       "\xf0\x9f\x98\x80"};
  std::string s;
  for (int n = std::uniform_int_distribution<int>(0, 6)(rng); n > 0; --n)
    s += pieces[std::uniform_int_distribution<std::size_t>(0, std::size(pieces) - 1)(rng)];
  return s;
}

Json random_json(std::mt19937& rng, int depth) {
  const int kind = std::uniform_int_distribution<int>(0, depth > 3 ? 3 : 5)(rng);
  switch (kind) {
    case 0:
      return random_string(rng);
    case 1: {
      const std::int64_t ends[] = {0,
                                   -1,
                                   1,
                                   std::numeric_limits<std::int64_t>::min(),
                                   std::numeric_limits<std::int64_t>::max(),
                                   std::uniform_int_distribution<std::int64_t>(-1000, 1000)(rng)};
      return ends[std::uniform_int_distribution<int>(0, 5)(rng)];
    }
    case 2:
      return std::uniform_int_distribution<int>(0, 1)(rng) == 0
                 ? Json(std::numeric_limits<std::uint64_t>::max())
                 : Json(std::uint64_t{42});
    case 3:
      return std::uniform_int_distribution<int>(0, 1)(rng) == 1;
    case 4: {
      Json a = Json::array();
      for (int n = std::uniform_int_distribution<int>(0, 4)(rng); n > 0; --n)
        a.push_back(random_json(rng, depth + 1));
      return a;
    }
    default: {
      Json o = Json::object();
      for (int n = std::uniform_int_distribution<int>(0, 4)(rng); n > 0; --n)
        o[random_string(rng) + std::to_string(n)] = random_json(rng, depth + 1);
      return o;
    }
  }
}

}  // namespace

TEST_CASE("json writer: random documents print as nlohmann's dump prints them") {
  std::mt19937 rng(20261125);
  for (int trial = 0; trial < 300; ++trial) {
    const Json doc = random_json(rng, 0);
    for (const int indent : {-1, 0, 1, 2, 4}) {
      JsonWriter w(indent);
      write(w, doc);
      const std::string text = std::move(w).str();
      CAPTURE(trial);
      CAPTURE(indent);
      REQUIRE(text == doc.dump(indent));
      REQUIRE(Json::parse(text) == doc);
    }
  }
}

TEST_CASE("json writer: fields, nesting and empty containers") {
  JsonWriter w(2);
  w.begin_object();
  w.field("name", "A");
  w.field("bytes", 1024);
  w.field("output", false);
  w.key("dims");
  w.begin_array();
  w.value(16);
  w.begin_object();
  w.end_object();
  w.end_array();
  w.key("empty");
  w.begin_array();
  w.end_array();
  w.end_object();
  CHECK(std::move(w).str() ==
        "{\n  \"name\": \"A\",\n  \"bytes\": 1024,\n  \"output\": false,\n  \"dims\": [\n    16,\n"
        "    {}\n  ],\n  \"empty\": []\n}");
}

TEST_CASE("json writer: a string that is not UTF-8 is a ValueError naming where it breaks") {
  // Truncated, stray continuation, overlong, surrogate and above U+10FFFF.
  for (const std::string& bad :
       {std::string("ab\xff"), std::string("\xc3"), std::string("x\xe2\x82y"), std::string("\x80"),
        std::string("\xc0\xaf"), std::string("\xe0\x80\xaf"), std::string("\xed\xa0\x80"),
        std::string("\xf4\x90\x80\x80"), std::string("\xf5\x80\x80\x80")}) {
    CAPTURE(bad);
    JsonWriter w;
    w.begin_array();
    w.value(1);
    CHECK_THROWS_AS(w.value(bad), dlavm::ValueError);
    CHECK_THROWS_AS(w.key(bad), dlavm::ValueError);
    w.end_array();  // nothing of the refused strings was written
    CHECK(std::move(w).str() == "[\n  1\n]");
  }
  JsonWriter w;
  CHECK_THROWS_WITH_AS(w.value(std::string("name\xff")),
                       "JSON text must be UTF-8: the string starting \"name\" has an invalid byte "
                       "0xff at offset 4",
                       dlavm::ValueError);
  CHECK_THROWS_WITH_AS(w.value(std::string("x\xe2\x82y")),
                       "JSON text must be UTF-8: the string starting \"x\" has an invalid byte "
                       "0x79 at offset 3",
                       dlavm::ValueError);
  CHECK_THROWS_WITH_AS(w.value(std::string("a\nb\xe2\x82")),
                       "JSON text must be UTF-8: the string starting \"a\\nb\" ends inside a "
                       "character that begins at offset 3",
                       dlavm::ValueError);
}

TEST_CASE("json writer: random byte strings are refused exactly when nlohmann refuses them") {
  std::mt19937 rng(3);
  // Bytes around every boundary of RFC 3629's table, so that each rule is hit often.
  const unsigned char bytes[] = {0x00, 0x41, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf,
                                 0xc0, 0xc1, 0xc2, 0xdf, 0xe0, 0xe1, 0xec, 0xed, 0xee,
                                 0xef, 0xf0, 0xf1, 0xf3, 0xf4, 0xf5, 0xff};
  // Characters at the edges of the valid ranges, to build strings that are mostly valid.
  const std::string edges[] = {"A",
                               "\x7f",
                               "\xc2\x80",
                               "\xdf\xbf",
                               "\xe0\xa0\x80",
                               "\xed\x9f\xbf",
                               "\xee\x80\x80",
                               "\xef\xbf\xbf",
                               "\xf0\x90\x80\x80",
                               "\xf4\x8f\xbf\xbf"};
  int refused = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    std::string s;
    if (trial % 2 == 0) {
      for (int n = std::uniform_int_distribution<int>(1, 5)(rng); n > 0; --n)
        s += static_cast<char>(bytes[std::uniform_int_distribution<std::size_t>(0, 24)(rng)]);
    } else {
      for (int n = std::uniform_int_distribution<int>(1, 3)(rng); n > 0; --n)
        s += edges[std::uniform_int_distribution<std::size_t>(0, 9)(rng)];
      if (trial % 4 == 1)  // one byte replaced
        s[std::uniform_int_distribution<std::size_t>(0, s.size() - 1)(rng)] =
            static_cast<char>(bytes[std::uniform_int_distribution<std::size_t>(0, 24)(rng)]);
    }
    bool nlohmann_ok = true;
    std::string want;
    try {
      want = Json(s).dump();
    } catch (const nlohmann::json::type_error&) {
      nlohmann_ok = false;
    }
    JsonWriter w(-1);
    bool ours_ok = true;
    try {
      w.value(s);
    } catch (const dlavm::ValueError&) {
      ours_ok = false;
    }
    CAPTURE(s);
    REQUIRE(ours_ok == nlohmann_ok);
    if (ours_ok) REQUIRE(std::move(w).str() == want);
    refused += !ours_ok;
  }
  CHECK(refused > 5000);  // both kinds of strings were tried
  CHECK(refused < 15000);
}

TEST_CASE("json writer: unbalanced containers are errors") {
  JsonWriter open;
  open.begin_object();
  CHECK_THROWS_WITH_AS(std::move(open).str(),
                       "JsonWriter: 1 container(s) still open at the end of the document",
                       dlavm::ValueError);
  JsonWriter closed;
  CHECK_THROWS_WITH_AS(closed.end_array(), "JsonWriter: ']' closes a container that is not open",
                       dlavm::ValueError);
}

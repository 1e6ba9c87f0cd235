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
  static const std::string pieces[] = {"a", "Z", "_", " ", "\"", "\\", "/", "\b", "\f", "\n",
                                       "\r", "\t", std::string(1, '\0'), "\x01", "\x1f", "\x7f",
                                       "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80"};
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
      const std::int64_t ends[] = {0, -1, 1, std::numeric_limits<std::int64_t>::min(),
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
  for (const std::string& bad : {std::string("ab\xff"), std::string("\xc3"),
                                std::string("x\xe2\x82y"), std::string("\x80")}) {
    JsonWriter w;
    CAPTURE(bad);
    CHECK_THROWS_AS(w.value(bad), dlavm::ValueError);
  }
  JsonWriter w;
  CHECK_THROWS_WITH_AS(w.value(std::string("name\xff")),
                       "JSON text must be UTF-8: the string starting \"name\" has an invalid byte "
                       "0xff at offset 4",
                       dlavm::ValueError);
}

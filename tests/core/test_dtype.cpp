#include <dlavm/core.hpp>

#include <doctest/doctest.h>

#include <string>

using dlavm::DType;

TEST_CASE("dtype: named types carry kind, bits and lanes") {
  CHECK(DType::int8().bits() == 8);
  CHECK(DType::int8().is_int());
  CHECK(DType::uint8().is_uint());
  CHECK(DType::float32().is_float());
  CHECK(DType::int16().bytes() == 2);
  CHECK(DType::int32().with_lanes(16).bytes() == 64);
  CHECK(DType::int32().with_lanes(16).element_of() == DType::int32());
  CHECK(DType::uint_bits(1).bytes() == 1);
}

TEST_CASE("dtype: formatting and parsing round-trip") {
  for (auto t : {DType::int8(), DType::int16(), DType::int32(), DType::uint8(), DType::float32(),
                 DType::int32().with_lanes(16), DType::uint_bits(4)}) {
    CAPTURE(t);
    CHECK(DType::parse(t.str()) == t);
    CHECK(fmt::format("{}", t) == t.str());
  }
  CHECK(fmt::format("{}", DType::int8()) == "int8");
  CHECK(fmt::format("{:>8}", DType::int8()) == "    int8");
  CHECK(fmt::format("{}", DType::int32().with_lanes(4)) == "int32x4");
}

TEST_CASE("dtype: value range and two's-complement wrap") {
  CHECK(DType::int8().min_value() == -128);
  CHECK(DType::int8().max_value() == 127);
  CHECK(DType::uint8().max_value() == 255);
  CHECK(DType::int32().min_value() == INT32_MIN);
  CHECK(DType::int64().max_value() == INT64_MAX);
  CHECK(DType::int8().wrap(128) == -128);
  CHECK(DType::int8().wrap(255) == -1);
  CHECK(DType::int8().wrap(-129) == 127);
  CHECK(DType::uint8().wrap(-1) == 255);
  CHECK(DType::int32().wrap(std::int64_t{1} << 31) == INT32_MIN);
  CHECK(DType::int64().wrap(INT64_MIN) == INT64_MIN);
}

TEST_CASE("dtype: malformed names raise ParseError naming the text") {
  for (const char* bad : {"", "int", "intx4", "bool", "int8x", "int8y", "float8", "int0", "int65",
                          "int8x0", "uint99999999999"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(DType::parse(bad), dlavm::ParseError);
  }
  CHECK_THROWS_WITH(DType::parse("int8q"), doctest::Contains("int8q"));
  CHECK_THROWS_AS(DType::int_bits(0), dlavm::ValueError);
  CHECK_THROWS_WITH(DType::uint_bits(65), doctest::Contains("65"));
}

TEST_CASE("dtype: messages quote at most 32 characters of the name, control characters as '?'") {
  const std::string long_name = "int8" + std::string(100000, 'x');
  CHECK_THROWS_WITH_AS(DType::parse(long_name),
                       ("dtype 'int8" + std::string(28, 'x') + "...': missing lane count").c_str(),
                       dlavm::ParseError);
  CHECK_THROWS_WITH(DType::parse(std::string("in\0t8", 5)),
                    "dtype 'in?t8': expected int<bits>, uint<bits> or float<bits>");
  CHECK_THROWS_WITH(DType::parse("int8q"),
                    "dtype 'int8q': unexpected trailing characters from offset 4");
}

// Static dims: Hana integral constants (the _c literal) and their mixing with ne expressions.
#include <dlavm/ne.hpp>

#include <boost/hana/plus.hpp>
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <type_traits>

namespace ne = dlavm::ne;
using namespace dlavm::literals;

// Everything here is checked by the compiler.
static_assert(std::is_same_v<decltype(16_c), boost::hana::llong<16>>);
static_assert(std::is_same_v<ne::IntConstant<16>, boost::hana::llong<16>>);
static_assert((16_c * 4_c).value == 64);
static_assert(16_c * 4_c == 64_c);
static_assert(16_c + 4_c == 20_c);
static_assert(16_c - 20_c == -4_c);
static_assert(-16_c == ne::IntConstant<-16>{});
static_assert(ne::floordiv(-7_c, 2_c) == -4_c);
static_assert(ne::floormod(-7_c, 2_c) == 1_c);
static_assert(ne::min(3_c, 5_c) == 3_c && ne::max(3_c, 5_c) == 5_c);
static_assert(3_c < 5_c && 5_c <= 5_c && 6_c > 5_c && 5_c >= 5_c && 3_c != 5_c);
static_assert(!(3_c == 5_c));
static_assert(0x10_c == 16_c && 0b101_c == 5_c && 010_c == 8_c && 1'000'000_c == 1000000_c);
static_assert((9223372036854775807_c).value == INT64_MAX);
static_assert(ne::is_int_constant_v<decltype(16_c)> && !ne::is_int_constant_v<int>);
static_assert(ne::int_c<7> == 7_c);
// integral_constant compatibility: the value converts in constant expressions
static_assert(std::int64_t{16_c} == 16);
constexpr std::int64_t kBlock = 16_c * 4_c;
static_assert(kBlock == 64);
// an array sized by a static dim (Clang 14 takes no integral constant as an array bound, not
// even std::integral_constant)
#if !defined(__clang__) || __clang_major__ > 14
static_assert(sizeof(int[16_c * 2_c]) == 32 * sizeof(int));
#endif
// mixing with a plain integer gives a plain integer (still constexpr)
static_assert(16_c * 4 == 64);

// Hana's own operators still apply between constants.
static_assert(boost::hana::plus(2_c, 3_c) == 5_c);

TEST_CASE("static dims combine with Expr at run time") {
  auto token = ne::var("token", 1, 2048);
  const ne::Expr rows = token * (16_c * 4_c);
  CHECK(fmt::format("{}", rows) == "token*64");
  CHECK(fmt::format("{}", 16_c + token) == "16 + token");
  const ne::Expr block = 16_c;
  CHECK(block.as_int() == 16);
  CHECK(ne::eval(ne::floordiv(token, 16_c), {{"token", 37}}) == 2);
  CHECK(ne::can_prove(ne::floormod(token * 16_c, 16_c) == 0_c));
  CHECK(fmt::format("{}", ne::simplify(ne::max(token, 4_c))) == "max(token, 4)");
  CHECK(fmt::format("{}", token - 2_c) == "token - 2");
  CHECK(fmt::format("{}", 3_c * token) == "3*token");
  CHECK(ne::can_prove(token >= 1_c));
  CHECK(ne::Expr(std::integral_constant<int, 5>{}).as_int() == 5);
}

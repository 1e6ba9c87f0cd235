// ne::linear_form: strides and offsets read off index expressions.
#include <dlavm/ne.hpp>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <vector>

namespace ne = dlavm::ne;

TEST_CASE("linear_form: constant strides of a flattened index") {
  auto i = ne::var("i", 0, 15);
  auto j = ne::var("j", 0, 15);
  const auto form = ne::linear_form((i * 16 + j) * 4 + 7, {i, j});
  REQUIRE(form.has_value());
  CHECK(form->offset.as_int() == 7);
  REQUIRE(form->strides.size() == 2);
  CHECK(form->strides[0].as_int() == 64);
  CHECK(form->strides[1].as_int() == 4);
  // order follows the list given
  const auto swapped = ne::linear_form((i * 16 + j) * 4 + 7, {j, i});
  REQUIRE(swapped.has_value());
  CHECK(swapped->strides[0].as_int() == 4);
  CHECK(swapped->strides[1].as_int() == 64);
  // a variable that does not occur has stride 0
  auto k = ne::var("k", 0, 3);
  const auto with_k = ne::linear_form(i * 2, {i, k});
  REQUIRE(with_k.has_value());
  CHECK(with_k->strides[1].as_int() == 0);
  CHECK(with_k->offset.as_int() == 0);
}

TEST_CASE("linear_form: symbolic strides and offsets") {
  auto token = ne::var("token", 1, 2048);
  auto base = ne::var("base", 0, 1 << 20);
  auto i = ne::var("i", 0, 63);
  auto j = ne::var("j", 0, 15);
  // a row-major [token, 64] tensor at base, element (i, j*4)
  const auto form = ne::linear_form(base + i * token * 64 + j * 4 + token, {i, j});
  REQUIRE(form.has_value());
  CHECK(fmt::format("{}", form->offset) == "token + base");
  CHECK(fmt::format("{}", form->strides[0]) == "token*64");
  CHECK(form->strides[1].as_int() == 4);
  // terms of the same variable merge: i*token + i*3
  const auto merged = ne::linear_form(i * token + i * 3 + 1, {i});
  REQUIRE(merged.has_value());
  CHECK(fmt::format("{}", merged->strides[0]) == "token + 3");
  CHECK(merged->offset.as_int() == 1);
  // distributes products: (i + 1)*token
  const auto dist = ne::linear_form((i + 1) * token, {i});
  REQUIRE(dist.has_value());
  CHECK(fmt::format("{}", dist->strides[0]) == "token");
  CHECK(fmt::format("{}", dist->offset) == "token");
}

TEST_CASE("linear_form: split loops simplify back to affine") {
  auto outer = ne::var("outer", 0, 3);
  auto inner = ne::var("inner", 0, 15);
  const ne::Expr fused = outer * 16 + inner;
  const auto form =
      ne::linear_form(ne::floordiv(fused, 16) * 256 + ne::floormod(fused, 16) * 2, {outer, inner});
  REQUIRE(form.has_value());
  CHECK(form->strides[0].as_int() == 256);
  CHECK(form->strides[1].as_int() == 2);
}

TEST_CASE("linear_form: nullopt when not affine in the listed variables") {
  auto i = ne::var("i", 0, 15);
  auto j = ne::var("j", 0, 15);
  auto t = ne::var("t", 0, 100);
  CHECK_FALSE(ne::linear_form(i * i, {i}).has_value());
  CHECK_FALSE(ne::linear_form(i * j, {i, j}).has_value());
  CHECK_FALSE(ne::linear_form(ne::floordiv(i * 3 + j, 2), {i}).has_value());
  CHECK_FALSE(ne::linear_form(ne::min(i, 4) + j, {i, j}).has_value());
  CHECK_FALSE(ne::linear_form(ne::select(t < 3, i, 0), {i}).has_value());
  // ...but fine in other variables
  const auto in_j = ne::linear_form(i * j + ne::floordiv(t, 2), {j});
  REQUIRE(in_j.has_value());
  CHECK(fmt::format("{}", in_j->strides[0]) == "i");
  CHECK(fmt::format("{}", in_j->offset) == "floordiv(t, 2)");
  // i*j is linear in j alone
  const auto only = ne::linear_form(i * j * 2 + 5, std::vector<ne::Var>{j});
  REQUIRE(only.has_value());
  CHECK(fmt::format("{}", only->strides[0]) == "i*2");
}

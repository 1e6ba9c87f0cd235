// ne expressions: construction, constant folding, printing, identity and structure.
#include <dlavm/ne.hpp>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <string>
#include <unordered_map>

namespace ne = dlavm::ne;

TEST_CASE("ne::var: name, range and identity") {
  auto token = ne::var("token", 1, 2048);
  CHECK(token.name() == "token");
  CHECK(token.min() == 1);
  CHECK(token.max() == 2048);
  CHECK(token.kind() == ne::Kind::Var);

  auto a = ne::var("i", 0, 15);
  auto b = ne::var("i", 0, 15);
  CHECK(a.id() < b.id());  // creation order
  CHECK_FALSE(ne::equal(a, b));
  CHECK(ne::equal(a, a));
  CHECK(ne::compare(a, b) < 0);
  CHECK(ne::compare(b, a) > 0);

  auto fixed = ne::var("one", 7, 7);  // a single value is a valid range
  CHECK(fixed.min() == fixed.max());
}

TEST_CASE("ne::var: min > max raises ValueError naming the variable and the numbers") {
  try {
    (void)ne::var("token", 10, 3);
    FAIL("no error");
  } catch (const dlavm::ValueError& e) {
    CHECK(std::string(e.what()) == "ne::var 'token': min 10 is greater than max 3");
  }
}

TEST_CASE("ne::Expr: integers convert implicitly and report as_int / is_const") {
  ne::Expr e = 16;
  CHECK(e.as_int() == 16);
  CHECK(e.is_const());
  CHECK(ne::Expr(std::int64_t{-5}).as_int() == -5);
  CHECK(ne::Expr(std::uint8_t{200}).as_int() == 200);
  CHECK_THROWS_AS(ne::Expr(std::uint64_t{1} << 63), dlavm::ValueError);
  auto x = ne::var("x", 0, 9);
  CHECK_FALSE(x.as_int().has_value());
  CHECK_FALSE(x.is_const());
  ne::Expr undefined;
  CHECK_FALSE(undefined.defined());
  CHECK(fmt::format("{}", undefined) == "<undefined>");
  CHECK_THROWS_AS(undefined + 1, dlavm::ValueError);
}

TEST_CASE("ne operators build the node kinds") {
  auto x = ne::var("x", -8, 8);
  auto y = ne::var("y", 1, 4);
  CHECK((x + y).kind() == ne::Kind::Add);
  CHECK((x - y).kind() == ne::Kind::Sub);
  CHECK((x * y).kind() == ne::Kind::Mul);
  CHECK(ne::floordiv(x, y).kind() == ne::Kind::FloorDiv);
  CHECK(ne::floormod(x, y).kind() == ne::Kind::FloorMod);
  CHECK(ne::min(x, y).kind() == ne::Kind::Min);
  CHECK(ne::max(x, y).kind() == ne::Kind::Max);
  CHECK((x == y).kind() == ne::Kind::EQ);
  CHECK((x != y).kind() == ne::Kind::NE);
  CHECK((x < y).kind() == ne::Kind::LT);
  CHECK((x <= y).kind() == ne::Kind::LE);
  CHECK((x > y).kind() == ne::Kind::GT);
  CHECK((x >= y).kind() == ne::Kind::GE);
  CHECK(((x < y) && (y < 3)).kind() == ne::Kind::And);
  CHECK(((x < y) || (y < 3)).kind() == ne::Kind::Or);
  CHECK((!(x < y)).kind() == ne::Kind::Not);
  CHECK(ne::select(x < y, x, y).kind() == ne::Kind::Select);
  // integers on either side
  CHECK((1 + x).kind() == ne::Kind::Add);
  CHECK((x * 2).kind() == ne::Kind::Mul);
  CHECK((3 < x).kind() == ne::Kind::LT);
  const ne::Expr sum = x + 5;  // keeps the node alive
  const auto* node = sum.as<ne::BinaryNode>();
  REQUIRE(node != nullptr);
  CHECK(ne::equal(node->a, x));
  CHECK(node->b.as_int() == 5);
  CHECK((x + 5).as<ne::VarNode>() == nullptr);
  ne::Expr acc = x;
  acc += 1;
  acc *= 2;
  acc -= y;
  CHECK(fmt::format("{}", acc) == "((x + 1)*2) - y");
}

TEST_CASE("ne operators fold constant operands, with floor semantics") {
  CHECK((ne::Expr(4) * 4).as_int() == 16);
  CHECK((ne::Expr(3) - 10).as_int() == -7);
  CHECK(ne::floordiv(-7, 2).as_int() == -4);
  CHECK(ne::floormod(-7, 2).as_int() == 1);
  CHECK(ne::floordiv(7, -2).as_int() == -4);
  CHECK(ne::floormod(7, -2).as_int() == -1);
  CHECK(ne::min(3, -2).as_int() == -2);
  CHECK(ne::max(3, -2).as_int() == 3);
  CHECK((ne::Expr(3) < 4).as_int() == 1);
  CHECK((ne::Expr(3) >= 4).as_int() == 0);
  CHECK((ne::Expr(5) && 0).as_int() == 0);
  CHECK((ne::Expr(5) || 0).as_int() == 1);
  CHECK((!ne::Expr(5)).as_int() == 0);
  CHECK((-ne::Expr(5)).as_int() == -5);
  auto x = ne::var("x", 0, 3);
  CHECK(ne::equal(ne::select(1, x, 7), x));
  CHECK(ne::select(0, x, 7).as_int() == 7);
  // overflow is not folded: evaluation reports it
  const ne::Expr big = ne::Expr(INT64_MAX) + 1;
  CHECK(big.kind() == ne::Kind::Add);
  CHECK(ne::floordiv(INT64_MIN, -1).kind() == ne::Kind::FloorDiv);
}

TEST_CASE("ne: division or modulo by a constant zero raises ArithmeticError") {
  auto token = ne::var("token", 1, 2048);
  try {
    (void)ne::floordiv(token * 4096, 0);
    FAIL("no error");
  } catch (const dlavm::ArithmeticError& e) {
    CHECK(std::string(e.what()) == "floordiv(token*4096, 0): division by constant zero");
  }
  try {
    (void)ne::floormod(token + 1, ne::Expr(3) - 3);
    FAIL("no error");
  } catch (const dlavm::ArithmeticError& e) {
    CHECK(std::string(e.what()) == "floormod(token + 1, 0): modulo by constant zero");
  }
  CHECK_THROWS_AS(ne::floordiv(5, 0), dlavm::ArithmeticError);
  CHECK_THROWS_AS(ne::binary(ne::Kind::FloorMod, 5, 0), dlavm::ArithmeticError);
}

TEST_CASE("ne printer: readable, stable text") {
  auto token = ne::var("token", 1, 2048);
  auto i = ne::var("i", 0, 15);
  auto j = ne::var("j", 0, 15);
  auto fmt_ = [](const ne::Expr& e) { return fmt::format("{}", e); };
  CHECK(fmt_(token * 4096 + 16) == "(token*4096) + 16");
  CHECK(fmt_(i + j + 1) == "i + j + 1");
  CHECK(fmt_(i - (j - 1)) == "i - (j - 1)");
  CHECK(fmt_(i * j * 2) == "i*j*2");
  CHECK(fmt_(i * (j * 2)) == "i*(j*2)");
  CHECK(fmt_((i + 1) * 4) == "(i + 1)*4");
  CHECK(fmt_(ne::floordiv(i * 16 + j, 16)) == "floordiv((i*16) + j, 16)");
  CHECK(fmt_(ne::floormod(i, -3)) == "floormod(i, -3)");
  CHECK(fmt_(ne::min(i, j) + ne::max(i, 3)) == "min(i, j) + max(i, 3)");
  CHECK(fmt_(i < j) == "i < j");
  CHECK(fmt_(i <= j && j != 3) == "(i <= j) && (j != 3)");
  CHECK(fmt_(i == j || i > j || i >= 2) == "(i == j) || (i > j) || (i >= 2)");
  CHECK(fmt_(!(i < j)) == "!(i < j)");
  CHECK(fmt_(!i) == "!i");
  CHECK(fmt_(ne::select(i < j, i, j + 1)) == "select(i < j, i, j + 1)");
  CHECK(fmt_(i + -3) == "i + -3");
  CHECK(fmt_(-i) == "i*-1");
  CHECK(ne::to_string(token * 4096 + 16) == "(token*4096) + 16");
  CHECK(fmt::format("{}", token) == "token");                   // Var formats too
  CHECK(fmt::format("[{:>8}]", ne::Expr(42)) == "[      42]");  // string format specs apply
}

TEST_CASE("ne structural equality, order and hash") {
  auto x = ne::var("x", 0, 9);
  auto y = ne::var("y", 0, 9);
  const ne::Expr a = x * 4 + y;
  const ne::Expr b = x * 4 + y;  // separately built, same structure
  CHECK_FALSE(a.same_as(b));
  CHECK(ne::equal(a, b));
  CHECK(a.hash() == b.hash());
  CHECK(ne::compare(a, b) == 0);
  CHECK_FALSE(ne::equal(a, x * 4 + x));
  CHECK_FALSE(ne::equal(x + y, y + x));  // structure, not value
  CHECK(ne::compare(x + y, y + x) < 0);
  CHECK(ne::compare(ne::Expr(1), x) < 0);  // constants sort before variables
  CHECK_FALSE(ne::equal(ne::floordiv(x, 2), ne::floormod(x, 2)));
  CHECK_FALSE(ne::equal(ne::select(x < y, 1, 2), ne::select(x < y, 1, 3)));
  CHECK(ne::equal(!(x < y), !(x < y)));

  std::unordered_map<ne::Expr, int, ne::ExprHash, ne::ExprEqual> table;
  table[a] = 1;
  table[b] += 1;
  table[x] = 7;
  CHECK(table.size() == 2);
  CHECK(table.at(x * 4 + y) == 2);
}

TEST_CASE("ne::free_vars: distinct variables in creation order") {
  auto a = ne::var("a", 0, 1);
  auto b = ne::var("b", 0, 1);
  auto c = ne::var("c", 0, 1);
  const auto vars = ne::free_vars(c * b + a * c + ne::select(b < 1, c, 2));
  REQUIRE(vars.size() == 3);
  CHECK(vars[0].id() == a.id());
  CHECK(vars[1].id() == b.id());
  CHECK(vars[2].id() == c.id());
  CHECK(ne::free_vars(ne::Expr(3)).empty());
}

TEST_CASE("ne::Var: viewing an Expr") {
  auto x = ne::var("x", 0, 1);
  const ne::Expr e = x;
  CHECK(ne::Var(e).id() == x.id());
  CHECK_THROWS_AS(ne::Var(x + 1), dlavm::ValueError);
}

namespace {
// A pass written with the mutator idiom: doubles every constant.
struct DoubleConstants : ne::ExprMutator<DoubleConstants> {
  ne::Expr visit_int(const ne::IntImmNode& n, const ne::Expr&) { return n.value * 2; }
};
// A visitor: counts nodes.
struct CountNodes : ne::ExprVisitor<CountNodes> {
  int count = 0;
  void visit_int(const ne::IntImmNode&, const ne::Expr&) { ++count; }
  void visit_var(const ne::VarNode&, const ne::Expr&) { ++count; }
  void visit_binary(const ne::BinaryNode& n, const ne::Expr& e) {
    ++count;
    ExprVisitor::visit_binary(n, e);
  }
};
}  // namespace

TEST_CASE("ne functor idiom: mutator rebuilds only what changed, visitor walks") {
  auto x = ne::var("x", 0, 9);
  const ne::Expr e = x * 3 + ne::floordiv(x, 2);
  CHECK(fmt::format("{}", DoubleConstants().visit(e)) == "(x*6) + floordiv(x, 4)");
  const ne::Expr no_constants = x + x;
  CHECK(DoubleConstants().visit(no_constants).same_as(no_constants));
  CountNodes counter;
  counter.visit(e);
  CHECK(counter.count == 7);
}

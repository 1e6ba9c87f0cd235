// The IR handles of ne, te and tir are counted references (core/ref.hpp) to immutable nodes:
// copies share the node, and the node bases cannot be copied (a copy would slice).
#include <dlavm/tir.hpp>

#include <doctest/doctest.h>

#include <type_traits>
#include <unordered_set>

namespace ne = dlavm::ne;
namespace te = dlavm::te;
namespace tir = dlavm::tir;

static_assert(!std::is_copy_constructible_v<ne::Node>);
static_assert(!std::is_copy_constructible_v<te::ExprNode>);
static_assert(!std::is_copy_constructible_v<tir::StmtNode>);
static_assert(std::is_nothrow_copy_constructible_v<ne::Expr>);
static_assert(std::is_nothrow_move_constructible_v<te::Expr>);
static_assert(std::is_nothrow_copy_constructible_v<tir::Stmt>);

TEST_CASE("ir handles: copies share their node; operations hash by identity") {
  const auto i = ne::var("i", 0, 15);
  const ne::Expr e = i * 2 + 1;
  const ne::Expr copy = e;
  CHECK(copy.same_as(e));
  CHECK(copy.get() == e.get());

  const auto a = te::placeholder({16}, dlavm::DType::int8(), "A");
  const auto b = te::placeholder({16}, dlavm::DType::int8(), "A");
  const te::Expr read = a(i);
  CHECK(read.as<te::ReadNode>()->op == a.op());
  std::unordered_set<te::Operation> ops{a.op(), b.op(), a.op()};
  CHECK(ops.size() == 2);  // the same name, distinct operations

  const tir::Stmt s = tir::make_evaluate(read);
  const tir::Stmt t = s;
  CHECK(t.same_as(s));
}

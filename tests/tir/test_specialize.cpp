// tir::specialize: the special body runs exactly where its dims take their values, with the
// general function's parameters; parameters that disagree are an error naming them.
#include <dlavm/schedule.hpp>
#include <dlavm/tir.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace te = dlavm::te;
namespace ne = dlavm::ne;
namespace tir = dlavm::tir;
using dlavm::DType;

namespace {

// B[n, 4] = A[n, 4] + `add`, its rows split by `split`, lowered.
tir::PrimFunc plus(const ne::Expr& n, std::int64_t add, std::int64_t split, std::int64_t cols = 4) {
  auto A = te::placeholder(te::shape(n, cols), DType::int32(), "A");
  auto B = te::compute(
      te::shape(n, cols), [&](auto i, auto j) { return A(i, j) + add; }, "B");
  auto s = te::create_schedule(B);
  s[B].split(s[B].axis(0), split);
  return te::lower(s, {A, B}, "plus");
}

}  // namespace

TEST_CASE("tir::specialize: the special body runs where the dims take their values, alone") {
  auto n = ne::var("n", 1, 9);
  auto m = ne::var("m", 1, 3);  // a dim the functions do not read
  // different computations, so that the result shows which one ran
  const tir::PrimFunc general = plus(n, 1, 4);
  const ne::Substitution at[] = {{n, 3}, {m, 2}};
  const tir::PrimFunc f = tir::specialize(general, at, plus(n, 100, 1));
  CHECK(f.params.size() == general.params.size());
  CHECK(f.params[0].same_as(general.params[0]));
  const std::string text = tir::to_string(f);
  INFO(text);
  CHECK(text.find("if ((n == 3) && (m == 2))") != std::string::npos);
  for (const std::int64_t rows : {1, 3, 9})
    for (const std::int64_t mv : {1, 2}) {
      INFO("n = ", rows, ", m = ", mv);
      const ne::Binding b[] = {{"n", rows}, {"m", mv}};
      auto a = te::NDArray::random(DType::int32(), {rows, 4}, 7, -50, 50);
      te::NDArray out(DType::int32(), {rows, 4});
      te::NDArray* args[] = {&a, &out};
      tir::run(f, args, b);
      const std::int64_t add = rows == 3 && mv == 2 ? 100 : 1;
      for (std::int64_t i = 0; i < rows; ++i)
        for (std::int64_t j = 0; j < 4; ++j) CHECK(out.at({i, j}) == a.at({i, j}) + add);
    }
}

TEST_CASE("tir::specialize: parameters that disagree are an error naming them") {
  auto n = ne::var("n", 1, 9);
  const ne::Substitution at[] = {{n, 1}};
  CHECK_THROWS_WITH_AS(tir::specialize(plus(n, 1, 4), at, plus(n, 1, 1, 5)),
                       "tir::specialize: 'plus' parameter 0 ('A') is int32[n, 4], its "
                       "specialization's ('A') int32[n, 5]",
                       dlavm::ValueError);
  CHECK_THROWS_WITH_AS(tir::specialize(plus(n, 1, 4), {}, plus(n, 1, 1)),
                       "tir::specialize: no dims to specialize for", dlavm::ValueError);
}

// ne::linear_form: reads an index expression as offset + sum(stride_k * var_k), the form DMA
// and tensorize passes match against.
//
//   linear_form((i*16 + j)*4 + 7, {i, j})  ->  offset 7, strides {64, 4}
//   linear_form(token*64*i + base, {i})     ->  offset base, strides {token*64}
//
// Offset and strides may involve other variables but not the listed ones. nullopt when the
// expression is not linear in the listed variables (i*i, floordiv(i, 2), min(i, j), ...).
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/ne/expr.hpp>
#include <dlavm/ne/functor.hpp>
#include <dlavm/ne/simplify.hpp>

#include <cstddef>
#include <initializer_list>
#include <optional>
#include <span>
#include <vector>

namespace dlavm::ne {

struct LinearForm {
  Expr offset;                // free of the listed variables
  std::vector<Expr> strides;  // one per listed variable, in the order given
};

namespace detail {
// Whether e mentions any of vars.
bool uses_any(const Expr& e, std::span<const Var> vars);
}  // namespace detail

std::optional<LinearForm> linear_form(const Expr& e, std::span<const Var> vars);

std::optional<LinearForm> linear_form(const Expr& e, std::initializer_list<Var> vars);

}  // namespace dlavm::ne

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/ne/affine-inl.hpp>
#endif

// ne layer: symbolic integer expressions ("number expressions") for dynamic dims: variables
// with ranges, arithmetic, canonical simplification, bounds, substitution, checked evaluation,
// compiled evaluation and static (compile-time) dims. Guide: docs/ne.md.
#pragma once

#include <dlavm/ne/affine.hpp>
#include <dlavm/ne/bounds.hpp>
#include <dlavm/ne/compile.hpp>
#include <dlavm/ne/eval.hpp>
#include <dlavm/ne/expr.hpp>
#include <dlavm/ne/functor.hpp>
#include <dlavm/ne/int_math.hpp>
#include <dlavm/ne/interval.hpp>
#include <dlavm/ne/mutator.hpp>
#include <dlavm/ne/ops.hpp>
#include <dlavm/ne/printer.hpp>
#include <dlavm/ne/simplify.hpp>
#include <dlavm/ne/static.hpp>
#include <dlavm/ne/structural.hpp>
#include <dlavm/ne/substitute.hpp>

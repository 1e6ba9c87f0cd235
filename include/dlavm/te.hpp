// te layer: tensor expressions. Placeholders and computes over index lambdas, reductions,
// value expressions with their visitor/mutator, host arrays and direct evaluation.
#pragma once

#include <dlavm/te/buffer.hpp>
#include <dlavm/te/evaluate.hpp>
#include <dlavm/te/expr.hpp>
#include <dlavm/te/index_eval.hpp>
#include <dlavm/te/iter_var.hpp>
#include <dlavm/te/mutator.hpp>
#include <dlavm/te/ndarray.hpp>
#include <dlavm/te/npy.hpp>
#include <dlavm/te/ops.hpp>
#include <dlavm/te/pad.hpp>
#include <dlavm/te/printer.hpp>
#include <dlavm/te/tensor.hpp>

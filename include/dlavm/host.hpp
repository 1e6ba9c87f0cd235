// host layer: a CPU implementation of every graph op on te::NDArray, plain loops that are both
// the fallback for ops an accelerator cannot run and the reference executor's kernels. Each
// family's header comment defines the exact semantics of its ops (rounding, saturation,
// wrap-around); nothing else does.
#pragma once

#include <dlavm/host/common.hpp>
#include <dlavm/host/conv.hpp>
#include <dlavm/host/elementwise.hpp>
#include <dlavm/host/float_ops.hpp>
#include <dlavm/host/image.hpp>
#include <dlavm/host/integer_ops.hpp>
#include <dlavm/host/linear.hpp>
#include <dlavm/host/logic.hpp>
#include <dlavm/host/pool.hpp>
#include <dlavm/host/quantize.hpp>
#include <dlavm/host/reduce.hpp>
#include <dlavm/host/transform.hpp>
#include <dlavm/host/unary.hpp>

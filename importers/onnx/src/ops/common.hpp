// What the converters share: the node and output types, the refusal, and the readers of
// dims, axes and constant inputs; and the converters themselves, which converters.cpp lists
// in its table. One file per family: nn.cpp (convolution, pooling, products), math.cpp
// (element-wise), activations.cpp (element-wise math and reductions), logic.cpp (comparisons,
// logic, Where and If), tensor.cpp (shapes and data movement), quantize.cpp, qoperator.cpp
// (com.microsoft's quantized operators).
#pragma once

#include <dlavm/core/error.hpp>
#include <dlavm/graph/ops.hpp>
#include <dlavm/ne/expr.hpp>

#include <fmt/format.h>

#include "../importer.hpp"
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dlavm::onnx::detail {

using Node = ::onnx::NodeProto;
using Outs = std::vector<Value>;

[[noreturn]] inline void unsupported(std::string reason) { throw Unsupported{std::move(reason)}; }

// A static dim, or an Unsupported naming what needs it.
std::int64_t static_dim(const ne::Expr& d, std::string_view what);
// A sum of the model's dims, pads and window sizes, each as large as the model says: an
// Unsupported naming `what` when it leaves int64.
std::int64_t window_sum(std::initializer_list<std::int64_t> terms, std::string_view what);
// axis in [-rank, rank) as a dim index; a ValueError naming `what` otherwise.
std::int64_t normalize_axis(std::int64_t axis, std::int64_t rank, std::string_view what);
// The integer values of a constant (int64 or int32 shapes, pads, axes).
std::vector<std::int64_t> ints_of(const te::NDArray& a);
// Input k as constant integers (indices, axes, starts, repeats): an Unsupported naming `role`
// when it is not a constant integer tensor of rank 0 or 1, or holds a symbolic dim.
std::vector<std::int64_t> constant_ints(Importer& im, const Node& n, int k, std::string_view role);
// A scalar of a constant tensor (one element, any rank).
double scalar_of(const te::NDArray& a, std::string_view what);
// The first versions of the binary operators (Add-1/6, Mul-1/6, Equal-1, And-1, ...) broadcast
// only when told to, along `axis` (a legacy form); without the attribute they are today's
// operators on operands of one shape. An Unsupported when it is given.
void refuse_legacy_broadcast(Importer& im, const Node& n);

// The parameters of a 2-D convolution node (Conv, ConvInteger, QLinearConv) whose input is x
// and weight w (nn.cpp); `one_d`: a 1-D node's attributes, for x and w viewed as height-1
// images.
host::Conv2dParams conv_params(Importer& im, const Node& n, const graph::Expr& x,
                               const graph::Expr& w, bool one_d = false);

// A reshape of x to `dims` (nullopt: the one inferred dim), written with the reshape op's 0
// (the input's dim at that position) and -1 where a dim is symbolic; Unsupported when a
// reshape cannot say it (shape.cpp).
graph::Expr reshape_to_inferred(Importer& im, const graph::Expr& x,
                                const std::vector<std::optional<ne::Expr>>& dims);
graph::Expr reshape_to_dims(Importer& im, const graph::Expr& x, const std::vector<ne::Expr>& dims);
// Element-wise arithmetic and Concat over computed shapes, when an operand is one, or over int64
// constants too (`constants_too`); nullopt otherwise: the operator's graph form.
std::optional<Outs> binary_dims(Importer& im, const Node& n, ne::Kind kind,
                                bool constants_too = false);
std::optional<Outs> concat_dims(Importer& im, const Node& n);

// The converters, named after the operator; a suffix _vN marks the converter of the versions
// before a change in meaning (converters.cpp has the ranges).
// Input k, or (absent) a zero of `dtype` in the shape of input `like`: ONNX's default zero
// point (uint8 for QuantizeLinear, the quantized input's type elsewhere). quantize.cpp.
graph::Expr default_zero_point(Importer& im, const Node& n, int k, int like, DType dtype,
                               std::string_view name);

namespace convert {
// nn.cpp
Outs conv(Importer&, const Node&);
Outs conv_transpose(Importer&, const Node&);
Outs gemm(Importer&, const Node&);
Outs matmul(Importer&, const Node&);
Outs max_pool(Importer&, const Node&);
Outs average_pool(Importer&, const Node&);
Outs global_average_pool(Importer&, const Node&);
Outs batch_normalization_v1(Importer&, const Node&);
Outs batch_normalization(Importer&, const Node&);
Outs layer_normalization(Importer&, const Node&);
// math.cpp
Outs add_v1(Importer&, const Node&);
Outs add(Importer&, const Node&);
Outs mul_v1(Importer&, const Node&);
Outs mul(Importer&, const Node&);
Outs relu(Importer&, const Node&);
Outs clip_v1(Importer&, const Node&);
Outs clip(Importer&, const Node&);
Outs softmax_v1(Importer&, const Node&);
Outs softmax(Importer&, const Node&);
Outs sub(Importer&, const Node&);
Outs div(Importer&, const Node&);
// activations.cpp
Outs sigmoid(Importer&, const Node&);
Outs tanh(Importer&, const Node&);
Outs exp(Importer&, const Node&);
Outs log(Importer&, const Node&);
Outs sqrt(Importer&, const Node&);
Outs erf(Importer&, const Node&);
Outs abs(Importer&, const Node&);
Outs neg(Importer&, const Node&);
Outs hard_swish(Importer&, const Node&);
Outs hard_sigmoid(Importer&, const Node&);
Outs leaky_relu(Importer&, const Node&);
Outs prelu(Importer&, const Node&);
Outs pow(Importer&, const Node&);
Outs max(Importer&, const Node&);
Outs min(Importer&, const Node&);
Outs sum(Importer&, const Node&);
Outs mean(Importer&, const Node&);
Outs sub_tensors(Importer&, const Node&);
Outs div_tensors(Importer&, const Node&);
Outs reduce_sum_v1(Importer&, const Node&);
Outs reduce_sum(Importer&, const Node&);
Outs reduce_mean_v1(Importer&, const Node&);
Outs reduce_mean(Importer&, const Node&);
Outs reduce_max_v1(Importer&, const Node&);
Outs reduce_max(Importer&, const Node&);
Outs reduce_min_v1(Importer&, const Node&);
Outs reduce_min(Importer&, const Node&);
Outs log_softmax_v1(Importer&, const Node&);
Outs log_softmax(Importer&, const Node&);
Outs reciprocal(Importer&, const Node&);
Outs floor(Importer&, const Node&);
Outs ceil(Importer&, const Node&);
Outs round(Importer&, const Node&);
Outs sign(Importer&, const Node&);
Outs softplus(Importer&, const Node&);
Outs softsign(Importer&, const Node&);
Outs sin(Importer&, const Node&);
Outs cos(Importer&, const Node&);
Outs tan(Importer&, const Node&);
Outs asin(Importer&, const Node&);
Outs acos(Importer&, const Node&);
Outs atan(Importer&, const Node&);
Outs sinh(Importer&, const Node&);
Outs cosh(Importer&, const Node&);
Outs asinh(Importer&, const Node&);
Outs acosh(Importer&, const Node&);
Outs atanh(Importer&, const Node&);
Outs mish(Importer&, const Node&);
Outs elu(Importer&, const Node&);
Outs selu(Importer&, const Node&);
Outs celu(Importer&, const Node&);
Outs thresholded_relu(Importer&, const Node&);
Outs gelu(Importer&, const Node&);
Outs reduce_sum_square_v1(Importer&, const Node&);
Outs reduce_sum_square(Importer&, const Node&);
Outs reduce_l1_v1(Importer&, const Node&);
Outs reduce_l1(Importer&, const Node&);
Outs reduce_l2_v1(Importer&, const Node&);
Outs reduce_l2(Importer&, const Node&);
Outs reduce_log_sum_v1(Importer&, const Node&);
Outs reduce_log_sum(Importer&, const Node&);
Outs reduce_log_sum_exp_v1(Importer&, const Node&);
Outs reduce_log_sum_exp(Importer&, const Node&);
// image.cpp
Outs resize(Importer&, const Node&);
Outs arg_max(Importer&, const Node&);
Outs arg_min(Importer&, const Node&);
// logic.cpp
Outs equal_v1(Importer&, const Node&);
Outs equal(Importer&, const Node&);
Outs greater_v1(Importer&, const Node&);
Outs greater(Importer&, const Node&);
Outs greater_or_equal(Importer&, const Node&);
Outs less_v1(Importer&, const Node&);
Outs less(Importer&, const Node&);
Outs less_or_equal(Importer&, const Node&);
Outs and_v1(Importer&, const Node&);
Outs and_(Importer&, const Node&);
Outs or_v1(Importer&, const Node&);
Outs or_(Importer&, const Node&);
Outs xor_v1(Importer&, const Node&);
Outs xor_(Importer&, const Node&);
Outs not_(Importer&, const Node&);
Outs where(Importer&, const Node&);
Outs is_nan(Importer&, const Node&);
Outs is_inf(Importer&, const Node&);
Outs if_(Importer&, const Node&);
// recurrent.cpp
Outs lstm(Importer&, const Node&);
Outs gru(Importer&, const Node&);
Outs rnn(Importer&, const Node&);
// shape.cpp
Outs shape(Importer&, const Node&);
Outs size(Importer&, const Node&);
Outs gather(Importer&, const Node&);
Outs slice_v1(Importer&, const Node&);
Outs slice(Importer&, const Node&);
Outs unsqueeze_v1(Importer&, const Node&);
Outs unsqueeze(Importer&, const Node&);
Outs squeeze_v1(Importer&, const Node&);
Outs squeeze(Importer&, const Node&);
Outs reshape_v1(Importer&, const Node&);
Outs reshape(Importer&, const Node&);
Outs identity(Importer&, const Node&);
Outs dropout(Importer&, const Node&);
Outs constant_of_shape(Importer&, const Node&);
Outs range(Importer&, const Node&);
// data_movement.cpp
Outs slice_tensor(Importer& im, const Node& n, std::vector<std::int64_t> starts,
                  std::vector<std::int64_t> ends, std::vector<std::int64_t> axes,
                  std::vector<std::int64_t> steps);
Outs take(Importer&, const Node&);
Outs expand(Importer&, const Node&);
Outs tile(Importer&, const Node&);
Outs split_v2(Importer&, const Node&);
Outs split(Importer&, const Node&);
// tensor.cpp
Outs flatten(Importer&, const Node&);
Outs transpose(Importer&, const Node&);
Outs concat_v1(Importer&, const Node&);
Outs concat(Importer&, const Node&);
Outs pad_v2(Importer&, const Node&);
Outs pad(Importer&, const Node&);
Outs cast(Importer&, const Node&);
Outs constant(Importer&, const Node&);
// quantize.cpp
Outs quantize_linear(Importer&, const Node&);
Outs dequantize_linear(Importer&, const Node&);
Outs conv_integer(Importer&, const Node&);
Outs matmul_integer(Importer&, const Node&);
Outs qlinear_conv(Importer&, const Node&);
Outs qlinear_matmul(Importer&, const Node&);
// com.microsoft: quantize.cpp, then qoperator.cpp (ONNX Runtime's QOperator form)
Outs qgemm(Importer&, const Node&);
Outs qlinear_add(Importer&, const Node&);
Outs qlinear_mul(Importer&, const Node&);
Outs qlinear_global_average_pool(Importer&, const Node&);
Outs qlinear_concat(Importer&, const Node&);
Outs qlinear_sigmoid(Importer&, const Node&);
Outs qlinear_leaky_relu(Importer&, const Node&);
}  // namespace convert

}  // namespace dlavm::onnx::detail

// Firmware kernels as data: what a host step of a built model becomes in the C++ header that
// deploy::emit writes, a call of a kernel the header can reach (runtime/kernels.hpp's, or one
// of the user's whose header EmitOptions::includes adds), with arguments the emitter prints.
// An op record carries its firmware kernel next to its type rule and host kernel
// (OpRecord::firmware, graph::FirmwareKernel in graph/op.hpp), as TensorFlow Lite Micro's
// registrations carry their kernels: adding an op with a firmware kernel touches its record
// only, and the emitter knows no op. A kernel says why a step has no call (its `support`), or
// the call (its `call`):
//
//   // relu: dlavm::runtime::relu(x, y, elements)
//   graph::FirmwareKernel relu{.call = [](const graph::FirmwareStep& s) {
//     return graph::FirmwareCall{"dlavm::runtime::relu",
//                                {graph::FirmwareArg::input(0), graph::FirmwareArg::output(),
//                                 graph::FirmwareArg::dim(graph::element_count(s.input(0)))}};
//   }};
//   // -> dlavm::runtime::relu(s.template at<std::int8_t>(0x400ULL), ..., d0 * 64);
//
// Arguments are plain data: the step's operands (pointers to their elements, or bytes), dims as
// ne::Expr in the model's symbolic dims, literals, and aggregates and local arrays for kernels
// that take a shape (a transpose's permutation, a pooling's window).
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/ne/expr.hpp>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

namespace dlavm::graph {

struct FirmwareArg {
  enum class Kind : std::uint8_t {
    Input,      // a pointer to input `index`'s elements, of its element type
    Output,     // a pointer to the output's elements
    Bytes,      // input `index` (the output when index is kOutput) as a byte pointer
    Dim,        // `expr`, an expression in the model's symbolic dims
    Int,        // `value`, with the literal suffix `suffix` ("", "LL", "ULL")
    Typed,      // `value` as input `index`'s element type: T(valueLL)
    Float,      // `number` as a float (the nearest one), exactly (a hexadecimal literal)
    Bool,       // value != 0
    Aggregate,  // `type`{items...} (`type` empty: a braced list)
    Local,      // the local of FirmwareCall::locals named `type`
    Address,    // a `type` pointer to the planned address `value` (the emitter's own calls)
  };
  static constexpr std::size_t kOutput = std::numeric_limits<std::size_t>::max();

  Kind kind = Kind::Int;
  std::size_t index = 0;
  ne::Expr expr{};
  std::int64_t value = 0;
  std::string suffix{};
  double number = 0;
  std::string type{};
  std::vector<FirmwareArg> items{};

  static FirmwareArg input(std::size_t k) { return {.kind = Kind::Input, .index = k}; }
  static FirmwareArg output() { return {.kind = Kind::Output}; }
  static FirmwareArg bytes(std::size_t k) { return {.kind = Kind::Bytes, .index = k}; }
  static FirmwareArg dim(ne::Expr d) { return {.kind = Kind::Dim, .expr = std::move(d)}; }
  static FirmwareArg integer(std::int64_t v, std::string suffix = "") {
    return {.kind = Kind::Int, .value = v, .suffix = std::move(suffix)};
  }
  static FirmwareArg typed(std::size_t k, std::int64_t v) {
    return {.kind = Kind::Typed, .index = k, .value = v};
  }
  static FirmwareArg real(double v) { return {.kind = Kind::Float, .number = v}; }
  static FirmwareArg boolean(bool b) { return {.kind = Kind::Bool, .value = b ? 1 : 0}; }
  static FirmwareArg aggregate(std::string type, std::vector<FirmwareArg> items) {
    return {.kind = Kind::Aggregate, .type = std::move(type), .items = std::move(items)};
  }
  static FirmwareArg local(std::string name) {
    return {.kind = Kind::Local, .type = std::move(name)};
  }
  static FirmwareArg address(std::string type, std::uint64_t at) {
    return {.kind = Kind::Address, .value = static_cast<std::int64_t>(at), .type = std::move(type)};
  }
};

// A local the call reads, declared before it: `const type name[] = {items};` (an array), or
// `static constexpr type name{items};`.
struct FirmwareLocal {
  std::string name{}, type{};
  bool array = true;
  std::vector<FirmwareArg> items{};
};

struct FirmwareCall {
  std::string function{};  // qualified: "dlavm::runtime::softmax"
  std::vector<FirmwareArg> args{};
  std::vector<FirmwareLocal> locals{};
};

// The number of elements of a shape (1 for a scalar), simplified: what the firmware kernels
// and the type rules (graph::detail::product) count with.
ne::Expr element_count(std::span<const ne::Expr> shape);

}  // namespace dlavm::graph

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/firmware-inl.hpp>
#endif

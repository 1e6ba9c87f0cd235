// Text form of TIR, in the spirit of TVM's lowered text:
//   primfn vadd(A: int32[1, 64, 1, 16], ...) {
//     allocate(A_buf, int32, [1024]), storage_scope = local.acc_buffer
//     // attr [A_buf] pragma_dma_copy = 1
//     for (i1, 0, 64) {
//       for (i3, 0, 16) {
//         A_buf[(i1*16) + i3] = A[(i1*16) + i3]
// Distinct variables that share a name print with suffixes (i0, i0_1, i0_2), so the text
// never confuses two loops. The text depends only on structure and names: stable across runs.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/ne.hpp>
#include <dlavm/te.hpp>
#include <dlavm/tir/stmt.hpp>

#include <fmt/format.h>

#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace dlavm::tir {

std::string to_string(const Stmt& s, int indent = 0);

std::string to_string(const PrimFunc& f);

}  // namespace dlavm::tir

template <>
struct fmt::formatter<dlavm::tir::PrimFunc> : fmt::formatter<std::string_view> {
  auto format(const dlavm::tir::PrimFunc& f, format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(dlavm::tir::to_string(f), ctx);
  }
};
template <>
struct fmt::formatter<dlavm::tir::Stmt> : fmt::formatter<std::string_view> {
  auto format(const dlavm::tir::Stmt& s, format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(dlavm::tir::to_string(s), ctx);
  }
};

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/tir/printer-inl.hpp>
#endif

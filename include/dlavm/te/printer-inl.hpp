// Definitions for dlavm/te/printer.hpp (see core/api.hpp).
#pragma once

#include <dlavm/te/printer.hpp>

namespace dlavm::te {

DLAVM_INLINE std::string to_string(const Expr& e) {
  std::string out;
  if (!e.defined()) return "<undefined>";
  detail::ExprPrinter(out).visit(e);
  return out;
}

}  // namespace dlavm::te

// The message of the dlavm::Error a callable raises ("no error" when it returns), for tests
// that check several parts of one message.
#pragma once

#include <dlavm/core/error.hpp>

#include <string>

namespace dlavm_test {

inline std::string what_of(auto&& f) {
  try {
    f();
  } catch (const dlavm::Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace dlavm_test

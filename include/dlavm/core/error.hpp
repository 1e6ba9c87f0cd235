// The dlavm error hierarchy. Every user mistake the library can detect raises one of these,
// with a message that names the object involved (tensor, stage, axis, field, file, op) and
// the numbers (what was asked, what is allowed). Catch `dlavm::Error` to catch them all.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

namespace dlavm {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// A tensor or buffer shape does not fit the operation (mismatched dims, wrong rank,
// indivisible by the tensor intrinsic, out-of-bounds access proven at compile time).
class ShapeError : public Error {
  using Error::Error;
};

// A schedule primitive cannot be applied (unknown axis, cycle, mismatched tensorize, ...).
class ScheduleError : public Error {
  using Error::Error;
};

// A buffer does not fit in the memory that should hold it (SRAM, DRAM region, ...).
class CapacityError : public Error {
  using Error::Error;
};

// A value does not fit the instruction field it is meant for, or a word cannot be decoded.
class EncodingError : public Error {
  using Error::Error;
};

// A device failed at run time: deadlock, out-of-range access, allocation failure.
class DeviceError : public Error {
  using Error::Error;
};

// Malformed input text or bytes: JSON configurations, binary streams, model files.
class ParseError : public Error {
  using Error::Error;
};

// Arithmetic that has no defined result: division by zero, int64 overflow.
class ArithmeticError : public Error {
  using Error::Error;
};

// An argument that is out of its documented domain (e.g. a range with min > max), or an
// evaluation that lacks a binding for a symbolic variable.
class ValueError : public Error {
  using Error::Error;
};

// Operands whose element types do not fit together (int8 + int32 without a cast, a literal
// too wide for its operand's type, a float where only integers are supported).
class TypeError : public Error {
  using Error::Error;
};

// A configuration (accelerator parameters, build options) that is inconsistent or cannot be
// realised by the hardware encodings.
class ConfigError : public Error {
  using Error::Error;
};

// Formats a message with fmt and throws it as error type E:
//   dlavm::raise<ShapeError>("tensor '{}': dim {} is {}, expected {}", name, k, got, want);
template <class E, class... Args>
[[noreturn]] void raise(fmt::format_string<Args...> format, Args&&... args) {
  static_assert(std::is_base_of_v<Error, E>, "dlavm::raise throws dlavm::Error subclasses");
  throw E(fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace dlavm

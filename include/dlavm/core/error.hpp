// The dlavm error hierarchy. Every user mistake the library can detect raises one of these,
// with a message that names the object involved (tensor, stage, axis, field, file, op) and
// the numbers (what was asked, what is allowed). Catch `dlavm::Error` to catch them all.
#pragma once

#include <fmt/format.h>

#include <array>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

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

// A program or instruction stream uses an instruction feature the configured VTA design does
// not have (LOAD ACC_8BIT on a board's design, ALU MUL where opcode 4 is a shift, ...).
class FeatureError : public Error {
  using Error::Error;
};

// Throws a copy of `e` (the same class) whose message is "context: " followed by e's message:
// for a layer that catches an error from below and adds the object the user knows it by
// (graph::build adds "%3 (conv2d) over ..." to an error of the kernel's lowering).
[[noreturn]] inline void rethrow_with_context(const Error& e, std::string_view context) {
  const std::string m = std::string(context) + ": " + e.what();
  if (dynamic_cast<const ShapeError*>(&e)) throw ShapeError(m);
  if (dynamic_cast<const ScheduleError*>(&e)) throw ScheduleError(m);
  if (dynamic_cast<const CapacityError*>(&e)) throw CapacityError(m);
  if (dynamic_cast<const EncodingError*>(&e)) throw EncodingError(m);
  if (dynamic_cast<const DeviceError*>(&e)) throw DeviceError(m);
  if (dynamic_cast<const ParseError*>(&e)) throw ParseError(m);
  if (dynamic_cast<const ArithmeticError*>(&e)) throw ArithmeticError(m);
  if (dynamic_cast<const ValueError*>(&e)) throw ValueError(m);
  if (dynamic_cast<const TypeError*>(&e)) throw TypeError(m);
  if (dynamic_cast<const ConfigError*>(&e)) throw ConfigError(m);
  if (dynamic_cast<const FeatureError*>(&e)) throw FeatureError(m);
  throw Error(m);
}

namespace detail {

// Reached only while checking a format string at compile time: the call makes the constant
// evaluation fail, and the compiler's message names this function.
inline void format_string_error(const char* /*what*/) {}

// Parses the argument reference of a replacement field at `p` (digits, or nothing for the
// next automatic index) and checks it against `num_args`; returns the first character after
// it.
consteval const char* check_arg_ref(const char* p, std::size_t num_args, std::size_t& next_auto,
                                    int& indexing) {
  std::size_t index = 0;
  int kind = 1;  // 1: automatic, 2: manual
  if (*p >= '0' && *p <= '9') {
    kind = 2;
    for (; *p >= '0' && *p <= '9'; ++p) index = index * 10 + static_cast<std::size_t>(*p - '0');
  } else {
    index = next_auto++;
  }
  if (indexing != 0 && indexing != kind)
    format_string_error("cannot mix automatic and manual indexing");
  indexing = kind;
  if (index >= num_args) format_string_error("argument index out of range");
  return p;
}

// Checks a NUL-terminated format string: balanced braces ("{{" and "}}" escape them) and
// replacement fields "{[index][:spec]}" that name one of `num_args` arguments, nested fields
// in specs ("{:>{}}") included.
consteval void check_format_string(const char* p, std::size_t num_args) {
  std::size_t next_auto = 0;
  int indexing = 0;
  for (; *p != '\0'; ++p) {
    if (*p == '}') {
      if (p[1] != '}') format_string_error("unmatched '}' in format string");
      ++p;
      continue;
    }
    if (*p != '{') continue;
    if (p[1] == '{') {
      ++p;
      continue;
    }
    p = check_arg_ref(p + 1, num_args, next_auto, indexing);
    if (*p == ':') {
      for (++p; *p != '\0' && *p != '}'; ++p) {
        if (*p != '{') continue;
        p = check_arg_ref(p + 1, num_args, next_auto, indexing);
        if (*p != '}') format_string_error("invalid nested field in format spec");
      }
    }
    if (*p != '}') format_string_error("unterminated '{' in format string");
  }
}

// The format string of dlavm::raise, checked at compile time by check_format_string. Unlike
// fmt::format_string it does not depend on the argument types: the check is one small
// constant evaluation per call site instead of fmt's parser instantiated per distinct
// argument-type list. The format specs after ':' are checked against the argument types by
// fmt when the message is formatted.
template <std::size_t num_args>
class FormatString {
 public:
  // Implicit, so that raise<E>("...", args...) takes a string literal.
  consteval FormatString(const char* text) : text_(text) {  // NOLINT
    check_format_string(text, num_args);
  }

  constexpr std::string_view get() const { return text_; }

 private:
  std::string_view text_;
};

// One argument of a message, type-erased on its own, so that the argument lists of the many
// raise() calls share the instantiations for each argument type instead of each list paying
// for fmt::make_format_args anew.
template <class T>
fmt::format_args::format_arg erase_format_arg(const T& value) {
  return fmt::format_args(fmt::make_format_args(value)).get(0);
}

// One instantiation per error type: formats and throws.
template <class E>
[[noreturn]] void throw_formatted(std::string_view format, fmt::format_args args) {
  throw E(fmt::vformat(fmt::string_view(format.data(), format.size()), args));
}

}  // namespace detail

// Formats a message with fmt and throws it as error type E:
//   dlavm::raise<ShapeError>("tensor '{}': dim {} is {}, expected {}", name, k, got, want);
// The format string is checked at compile time (see detail::FormatString); the arguments reach
// fmt type-erased one by one, so that the hundreds of error paths in the headers do not each
// instantiate fmt's machinery in every translation unit.
template <class E, class... Args>
[[noreturn]] void raise(detail::FormatString<sizeof...(Args)> format, const Args&... args) {
  static_assert(std::is_base_of_v<Error, E>, "dlavm::raise throws dlavm::Error subclasses");
  const std::array<fmt::format_args::format_arg, sizeof...(Args)> erased{
      detail::erase_format_arg(args)...};
  detail::throw_formatted<E>(format.get(), fmt::format_args(erased.data(), sizeof...(Args)));
}

}  // namespace dlavm

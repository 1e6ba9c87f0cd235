// Internal: quoting untrusted text (file names, names read from files) in messages.
#pragma once

#include <fmt/format.h>

#include <cstddef>
#include <string>
#include <string_view>

namespace dlavm::vta::detail {

// At most `max` bytes of `s`, marked "..." when cut, control characters written as \xNN: for
// quoting untrusted text in messages (a NUL byte would end what() early).
inline std::string excerpt(std::string_view s, std::size_t max = 48) {
  std::string out;
  for (std::size_t i = 0; i < s.size() && i < max; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7F) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += s[i];
    }
  }
  if (s.size() > max) out += "...";
  return out;
}

}  // namespace dlavm::vta::detail

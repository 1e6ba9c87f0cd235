// Definitions for tune/shard.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/tune/shard.hpp>

#include <charconv>
#include <cstdint>

namespace dlavm::tune {

DLAVM_INLINE Shard parse_shard(std::string_view spec) {
  const auto slash = spec.find('/');
  const auto number = [&](std::string_view text, std::size_t& out) {
    const auto* end = text.data() + text.size();
    const auto r = std::from_chars(text.data(), end, out);
    return !text.empty() && r.ec == std::errc() && r.ptr == end;
  };
  Shard s;
  if (slash == std::string_view::npos || !number(spec.substr(0, slash), s.index) ||
      !number(spec.substr(slash + 1), s.count))
    raise<ValueError>("shard '{}' is not i/n (two decimal numbers, e.g. 0/4)", spec);
  if (s.count == 0 || s.index >= s.count)
    raise<ValueError>("shard '{}': the index must be in [0, {}), the number of shards", spec,
                      s.count);
  return s;
}

}  // namespace dlavm::tune

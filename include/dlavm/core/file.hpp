// What keeps a path from being read as a file, asked before a read that would fail or not end.
#pragma once

#include <filesystem>
#include <optional>
#include <string_view>

namespace dlavm {

// "a directory" or "no regular file" (a device such as /dev/zero, whose read would not end, or a
// pipe) for a path that exists as something other than a regular file; nullopt for a regular
// file or a path that does not exist (opening it reports that).
inline std::optional<std::string_view> not_a_file(const std::filesystem::path& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status) || std::filesystem::is_regular_file(status))
    return std::nullopt;
  return std::filesystem::is_directory(status) ? "a directory" : "no regular file";
}

}  // namespace dlavm

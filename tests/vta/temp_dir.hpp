// A scratch folder under the system temp directory, emptied on creation and removed with the
// object; shared by the vta tests that write files.
#pragma once

#include <filesystem>
#include <string>

namespace dlavm_test {

struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const char* name) : path(std::filesystem::temp_directory_path() / name) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string str() const { return path.string(); }
  std::string operator/(const char* name) const { return (path / name).string(); }
};

}  // namespace dlavm_test

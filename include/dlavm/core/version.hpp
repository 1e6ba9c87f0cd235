// Library version, kept in step with project(VERSION) in CMakeLists.txt by a test.
#pragma once

#define DLAVM_VERSION_MAJOR 0
#define DLAVM_VERSION_MINOR 1
#define DLAVM_VERSION_PATCH 0

namespace dlavm {
inline constexpr int version_major = DLAVM_VERSION_MAJOR;
inline constexpr int version_minor = DLAVM_VERSION_MINOR;
inline constexpr int version_patch = DLAVM_VERSION_PATCH;
}  // namespace dlavm

// A program on the installed importer (dlavm::onnx): bytes that are not a model are a
// ParseError, a dlavm::Error like every other.
#include <dlavm/onnx/import.hpp>

#include <cstdint>
#include <vector>

int main() {
  const std::vector<std::uint8_t> junk = {0xff, 0x01, 0x02};
  try {
    dlavm::onnx::import(std::span<const std::uint8_t>(junk));
  } catch (const dlavm::ParseError&) {
    return 0;
  }
  return 1;
}

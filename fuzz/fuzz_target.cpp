// One libFuzzer binary per entry function of fuzz/targets.hpp, chosen at compile time by
// DLAVM_FUZZ_ENTRY (fuzz/CMakeLists.txt). A dlavm::Error with a bounded, printable message is
// the expected answer to a bad input (dlavm_fuzz::run); anything else escapes and libFuzzer
// reports it with the input that caused it.
#include "targets.hpp"
#include <cstddef>
#include <cstdint>
#include <span>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  dlavm_fuzz::run(DLAVM_FUZZ_ENTRY, std::span<const std::uint8_t>(data, size));
  return 0;
}

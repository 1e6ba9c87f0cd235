// One libFuzzer binary per entry function of fuzz/targets.hpp, chosen at compile time by
// DLAVM_FUZZ_ENTRY (fuzz/CMakeLists.txt). A dlavm::Error with a bounded, printable message is
// the expected answer to a bad input (dlavm_fuzz::run); anything else escapes and libFuzzer
// reports it with the input that caused it. fuzz_onnx (DLAVM_FUZZ_ONNX) takes its entry from
// fuzz/onnx_target.hpp, which needs the importer library.
#include "targets.hpp"
#ifdef DLAVM_FUZZ_ONNX
#include "onnx_target.hpp"
#endif
#include <cstddef>
#include <cstdint>
#include <span>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
#ifdef DLAVM_FUZZ_ONNX
  const std::size_t max_message = dlavm_fuzz::onnx_max_message(size);
#else
  const std::size_t max_message = dlavm_fuzz::kMaxMessage;
#endif
  dlavm_fuzz::run(DLAVM_FUZZ_ENTRY, std::span<const std::uint8_t>(data, size), max_message);
  return 0;
}

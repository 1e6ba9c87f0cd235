// The fuzz corpora as regression tests: every file under fuzz/corpus/<target>/ (the seeds and
// every input a fuzzer found a bug with) goes through that target's entry function, built here
// with the normal compiler, and must either succeed or raise a dlavm::Error (with a bounded,
// printable message: dlavm_fuzz::run). fuzz/corpus/onnx is replayed when the ONNX importer is
// built (DLAVM_FUZZ_ONNX, tests/CMakeLists.txt).
#include <doctest/doctest.h>

#include "../../fuzz/targets.hpp"
#ifdef DLAVM_FUZZ_ONNX
#include "../../fuzz/onnx_target.hpp"
#endif
#include <algorithm>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

std::size_t fixed_max_message(std::size_t) { return dlavm_fuzz::kMaxMessage; }

// Replays the corpus of one target; returns how many inputs it accepted and rejected.
// `max_message`: the longest message allowed for an input of that many bytes.
std::pair<int, int> replay(const std::string& target, dlavm_fuzz::Entry entry,
                           std::size_t (*max_message)(std::size_t) = fixed_max_message) {
  const fs::path dir = fs::path(DLAVM_SOURCE_DIR) / "fuzz" / "corpus" / target;
  REQUIRE(fs::is_directory(dir));
  std::vector<fs::path> files(fs::directory_iterator(dir), fs::directory_iterator{});
  std::sort(files.begin(), files.end());
  int accepted = 0, rejected = 0;
  for (const auto& file : files) {
    CAPTURE(file.string());
    std::ifstream in(file, std::ios::binary);
    const std::vector<std::uint8_t> data((std::istreambuf_iterator<char>(in)),
                                         std::istreambuf_iterator<char>());
    try {
      (dlavm_fuzz::run(entry, data, max_message(data.size())) ? accepted : rejected) += 1;
    } catch (const std::exception& e) {
      FAIL_CHECK("not a dlavm::Error with a bounded, printable message: " << e.what());
    }
  }
  MESSAGE(target << ": " << accepted << " accepted, " << rejected << " rejected");
  return {accepted, rejected};
}

}  // namespace

// Each corpus holds valid seeds and rejected inputs; both kinds must be there, or the corpus
// has lost what it was for.
TEST_CASE("fuzz corpus: config") {
  const auto [ok, bad] = replay("config", dlavm_fuzz::config);
  CHECK(ok > 0);
  CHECK(bad > 0);
}

TEST_CASE("fuzz corpus: dtype") {
  const auto [ok, bad] = replay("dtype", dlavm_fuzz::dtype);
  CHECK(ok > 0);
  CHECK(bad > 0);
}

TEST_CASE("fuzz corpus: manifest") {
  const auto [ok, bad] = replay("manifest", dlavm_fuzz::manifest);
  CHECK(ok > 0);
  CHECK(bad > 0);
}

TEST_CASE("fuzz corpus: stream") {
  const auto [ok, bad] = replay("stream", dlavm_fuzz::stream);
  CHECK(ok > 0);
  CHECK(bad > 0);
}

#ifdef DLAVM_FUZZ_ONNX
TEST_CASE("fuzz corpus: onnx") {
  const auto [ok, bad] = replay("onnx", dlavm_fuzz::onnx, dlavm_fuzz::onnx_max_message);
  CHECK(ok > 0);
  CHECK(bad > 0);
}
#endif

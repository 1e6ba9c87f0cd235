#include <dlavm/vta.hpp>
#include <dlavm/vta/hw/read.hpp>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "temp_dir.hpp"
#include "what_of.hpp"
#include <filesystem>
#include <fstream>
#include <string>

namespace vta = dlavm::vta;
namespace fs = std::filesystem;

using dlavm_test::TempDir;

namespace {
using dlavm_test::what_of;
}  // namespace

TEST_CASE("vta io: instruction, micro-op files and manifest round-trip") {
  TempDir dir("dlavm_test_vta_io");
  const vta::Config c;
  vta::Builder b{c};
  b.load({.memory = vta::MemId::Inp, .dram = 4, .x_size = 2});
  vta::UopKernel k;
  k.push(1, 2, 3);
  b.gemm(k);
  b.finish();
  const auto& s = b.stream();
  vta::ManifestBuffer in{"A", 0x10000, 32, dlavm::DType::int8(), false, "A.bin"};
  vta::ManifestBuffer out{"C", 0x11000, 64, dlavm::DType::int32(), true, ""};
  const auto m = vta::dump_stream(dir.path.string(), c, s, 0x20000, {in, out});
  const auto words = vta::read_insn_file(dir / "insn.bin");
  REQUIRE(words.size() == s.insns.size());
  CHECK(fs::file_size(dir / "insn.bin") == 16 * s.insns.size());
  CHECK(vta::decode(c.layout(), words[1]).dram_base == 0x20000 / 4);  // relocated LOAD UOP
  CHECK(words[0] == s.insns[0]);
  CHECK(vta::read_uop_file(dir / "uop.bin") == s.uops);
  CHECK(vta::load_manifest(dir / "manifest.json") == m);
  CHECK(m.buffers[1].output);
  const std::vector<std::byte> img(32, std::byte{7});
  vta::write_dram_image(dir / "A.bin", img);
  CHECK(vta::read_dram_image(dir / "A.bin", 32) == img);
  CHECK(vta::read_program(dir / "insn.bin", c.layout()).size() == s.insns.size());
}

TEST_CASE("vta io: truncated and corrupted files are precise errors") {
  TempDir dir("dlavm_test_vta_io");
  {
    std::ofstream f(dir / "short.bin", std::ios::binary);
    f << std::string(35, '\0');
  }
  CHECK(what_of([&] { vta::read_insn_file(dir / "short.bin"); })
            .find("35 bytes is not a whole number of 16-byte instructions; the last instruction "
                  "at byte offset 32 is truncated") != std::string::npos);
  CHECK(what_of([&] {
          vta::read_uop_file(dir / "short.bin");
        }).find("at byte offset 32 is truncated") != std::string::npos);
  CHECK(what_of([&] {
          vta::read_dram_image(dir / "short.bin", 64);
        }).find("DRAM image is 35 bytes, expected 64") != std::string::npos);
  {
    std::string bytes(32, '\0');
    bytes[16] = 6;  // second instruction: opcode 6
    std::ofstream f(dir / "bad.bin", std::ios::binary);
    f << bytes;
  }
  const auto msg = what_of([&] { vta::read_program(dir / "bad.bin", vta::Config{}.layout()); });
  CHECK(msg.find("at byte offset 16: instruction #1: unknown opcode 6") != std::string::npos);
  CHECK_THROWS_AS(vta::read_insn_file(dir / "missing.bin"), dlavm::ParseError);
  CHECK(what_of([] { vta::read_manifest("{\"config\": {}}"); }).find("missing key") !=
        std::string::npos);
  vta::Manifest m;
  auto j = nlohmann::json::parse(m.to_json());
  j["buffers"] = nlohmann::json::array({{{"name", "x"}, {"phys_addr", -4}}});
  CHECK(what_of([&] {
          vta::read_manifest(j.dump());
        }).find("buffer 'x'.phys_addr must be a non-negative integer, got -4") !=
        std::string::npos);
  j["buffers"] = nlohmann::json::array({{{"name", "x"},
                                         {"phys_addr", 4},
                                         {"bytes", 4},
                                         {"dtype", "int7x"},
                                         {"direction", "input"},
                                         {"file", ""}}});
  CHECK(what_of([&] { vta::read_manifest(j.dump()); }).find("buffer 'x'") != std::string::npos);
  CHECK_THROWS_AS(vta::read_manifest("{"), dlavm::ParseError);
}

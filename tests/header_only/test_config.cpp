// Header-only mode, second translation unit (see test_vadd.cpp): configuration files, the
// disassembler and the lowering printer from the same headers.
#include <dlavm/dlavm.hpp>
#include <dlavm/vta/hw/read.hpp>

#include <doctest/doctest.h>

namespace vta = dlavm::vta;

TEST_CASE("header-only: a configuration round-trips through vta_config.json") {
  vta::Config c;
  c.log_acc_buff_size = 16;
  CHECK(vta::read_config(c.to_json()) == c);
  CHECK_THROWS_AS(vta::read_config("{"), dlavm::ParseError);
}

TEST_CASE("header-only: a built stream disassembles") {
  vta::Builder b(vta::Config{});
  b.load({.memory = vta::MemId::Acc, .sram = 0, .dram = 0, .x_size = 2});
  b.finish();
  const auto text = vta::disassemble(b.layout(), b.stream());
  CHECK(text.find("LOAD ACC") != std::string::npos);
  CHECK(text.find("FINISH") != std::string::npos);
}

// A minimal user program: includes the umbrella header (so every dependency's headers must be
// found), evaluates a symbolic size, and encodes and decodes a VTA instruction for the default
// configuration (exit 0 and "PASS" only if all agree). It stays small so that the four ways of
// consuming dlavm compile in seconds; the test suites run everything else.
// DLAVM_CONSUMER_HEADERS (add_subdirectory): the headers it uses and one of each third-party
// library the dlavm target carries, not the umbrella. The build tree's include directory and
// usage requirements are what that way checks; parsing the whole library header-only (about
// 25 s of CI's two cores) is checked by the installed package and the single header.
#ifdef DLAVM_CONSUMER_HEADERS
#include <dlavm/ne.hpp>
#include <dlavm/runtime/isa.hpp>
#include <dlavm/vta/hw/config.hpp>

#include <boost/hana/plus.hpp>
#include <nlohmann/json.hpp>
#include <range/v3/view/filter.hpp>
#else
#include <dlavm/dlavm.hpp>
#endif

#include <fmt/format.h>

#include <cstdio>

int main() try {
  namespace ne = dlavm::ne;
  namespace rt = dlavm::runtime;
  auto token = ne::var("token", 1, 2048);
  const ne::Expr bytes = token * 4096 + 16;
  const bool size_ok = ne::eval(bytes, {{"token", 37}}) == 151568 &&
                       fmt::format("{}", ne::bounds(bytes)) == "[4112, 8388624]";

  const dlavm::vta::Config config;
  const rt::IsaLayout layout = config.layout();
  rt::InsnFields load;
  load.opcode = rt::Opcode::Load;
  load.memory_type = rt::MemId::Inp;
  load.dram_base = 4096;
  load.y_size = 14;
  load.x_size = 16;
  load.x_stride = 16;
  load.y_pad_0 = 1;
  const bool insn_ok =
      rt::unpack(layout, rt::pack(layout, load)) == load && config.inp_elem_bytes() == 16;

  const bool pass = size_ok && insn_ok;
  std::puts(pass ? "PASS" : "FAIL");
  return pass ? 0 : 1;
} catch (const dlavm::Error& e) {
  std::printf("error: %s\n", e.what());
  return 1;
}

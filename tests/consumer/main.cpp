// A minimal user program: includes the umbrella header (so every dependency's headers must be
// found), evaluates a symbolic size, and encodes and decodes a VTA instruction for the default
// configuration (exit 0 and "PASS" only if all agree). The test suites run everything else.
// DLAVM_CONSUMER_HEADERS (the header-only target, installed or through add_subdirectory): the
// headers it uses and one of each third-party library the dlavm target carries, not the
// umbrella. The target's include directories and usage requirements are what those ways check
// (the package installs include/ whole); parsing the whole library header-only costs about 45 s,
// paid once by tests/standalone's header_only_umbrella_emits_nothing, which compiles the single
// header and checks that a header-only unit defines nothing it does not use.
// DLAVM_CONSUMER_RUNS_VTA (the installed compiled library): the program also builds the vector
// add, runs it on the simulator, reads a configuration back (the file readers, outside the
// umbrella) and disassembles a stream.
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
#ifdef DLAVM_CONSUMER_RUNS_VTA
#include <dlavm/vta/hw/read.hpp>
#endif

#include <fmt/format.h>

#include <cstdio>
#include <string>

#ifdef DLAVM_CONSUMER_RUNS_VTA
namespace {

namespace te = dlavm::te;
namespace vta = dlavm::vta;

// C = A + B on VTA's ALU, against te::evaluate.
bool vector_add_runs() {
  vta::Env env;
  const auto shape = te::shape(1, 4, env.batch, env.block_out);
  auto A = te::placeholder(shape, env.acc_dtype, "A");
  auto B = te::placeholder(shape, env.acc_dtype, "B");
  auto A_buf = te::compute(
      shape, [&](auto... i) { return A(i...); }, "A_buf");
  auto B_buf = te::compute(
      shape, [&](auto... i) { return B(i...); }, "B_buf");
  auto C_buf = te::compute(
      shape, [&](auto... i) { return A_buf(i...) + B_buf(i...); }, "C_buf");
  auto C = te::compute(
      shape, [&](auto... i) { return te::cast(env.inp_dtype, C_buf(i...)); }, "C");
  auto s = te::create_schedule(C);
  for (const auto& t : {A_buf, B_buf, C_buf}) s[t].set_scope(env.acc_scope);
  s[A_buf].pragma(s[A_buf].axis(0), env.dma_copy);
  s[B_buf].pragma(s[B_buf].axis(0), env.dma_copy);
  s[C].pragma(s[C].axis(0), env.dma_copy);
  s[C_buf].pragma(s[C_buf].axis(0), env.alu);
  const auto prog = vta::build(s, {A, B, C}, env, "vadd");
  vta::SimDevice dev(env.config);
  auto a = te::NDArray::random(env.acc_dtype, {1, 4, 1, 16}, 1, -100, 100);
  auto b = te::NDArray::random(env.acc_dtype, {1, 4, 1, 16}, 2, -100, 100);
  te::NDArray c(env.inp_dtype, {1, 4, 1, 16});
  const auto run = prog.run(dev, {&a, &b, &c});
  return run.result.finished && c == te::evaluate(C, {{A, a}, {B, b}});
}

// A configuration round-trips through vta_config.json; a broken file is a ParseError.
bool config_reads_back() {
  vta::Config c;
  c.log_acc_buff_size = 16;
  if (!(vta::read_config(c.to_json()) == c)) return false;
  try {
    (void)vta::read_config("{");
  } catch (const dlavm::ParseError&) {
    return true;
  }
  return false;
}

bool stream_disassembles() {
  vta::Builder b(vta::Config{});
  b.load({.memory = vta::MemId::Acc, .sram = 0, .dram = 0, .x_size = 2});
  b.finish();
  const std::string text = vta::disassemble(b.layout(), b.stream());
  return text.find("LOAD ACC") != std::string::npos && text.find("FINISH") != std::string::npos;
}

}  // namespace
#endif

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

  bool pass = size_ok && insn_ok;
#ifdef DLAVM_CONSUMER_RUNS_VTA
  const bool vadd_ok = vector_add_runs(), config_ok = config_reads_back(),
             disasm_ok = stream_disassembles();
  if (!vadd_ok || !config_ok || !disasm_ok)
    std::printf("vector add %d, configuration %d, disassembly %d\n", vadd_ok, config_ok, disasm_ok);
  pass = pass && vadd_ok && config_ok && disasm_ok;
#endif
  std::puts(pass ? "PASS" : "FAIL");
  return pass ? 0 : 1;
} catch (const dlavm::Error& e) {
  std::printf("error: %s\n", e.what());
  return 1;
}

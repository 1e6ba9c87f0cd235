// deploy::plan_firmware: what the firmware header of a built model says, as plain data,
// before any C++ is written (deploy::emit prints it, deploy/emit.hpp). The plan holds:
//   dims        the run's dims: the params' symbolic dims (run()'s arguments), then the growing
//               dims of the states held packed (what each state holds)
//   memory      the memory plan, its stream regions sized for the firmware: a slot per static
//               stream, then one shared slot for the replayed steps, as large as their bound
//   streams     the static streams: VTA steps whose dims are all static (one, or with `lite`
//               a run of consecutive ones joined by barriers), encoded at planned addresses
//   replayed    the VTA steps whose streams are replayed for the dims of each run, and the
//               workspace a replay needs (the largest step's tables)
//   run         run()'s statements: a static stream placed once run, a replay, or the call of
//               a host step's firmware kernel (the op record's, OpRecord::firmware, or a layout
//               kernel of the emitter's own), with arguments as data; then the states' commits
//   weights,    the files' payloads (the weight region's image; the static streams' words)
//   insts
// A step without a firmware kernel is refused, naming the node and the op; so are dtypes
// firmware does not hold (8, 16, 32 and 64-bit integers and float32), a growing state
// firmware cannot append to, and a kernel's call that reads an input or a local the step does
// not have. Its errors start "deploy::emit:", the call it is the first half of.
//
//   auto plan = deploy::plan_firmware(mod, {.lite = true});
//   for (const auto& s : plan.run)
//     if (s.kind == deploy::PlannedStep::Kind::Call) fmt::print("{}\n", s.call.function);
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/firmware.hpp>
#include <dlavm/graph/memory_plan.hpp>
#include <dlavm/graph/module.hpp>
#include <dlavm/vta/hw/isa.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dlavm::deploy {

struct EmitOptions {
  std::string ns = {};  // the header's namespace; empty: the module's name
  // a log line per step and per transfer of each stream (Session::set_log); without it the
  // header calls no logging, and no printf-family function is linked
  bool debug = false;
  bool lite = false;  // consecutive static VTA steps written as one stream (one device run)
  // also write <ns>.weights.hpp: the weights file as a constant array, kWeightsFile, for
  // firmware that keeps its weights in its image (flash) rather than reading a file
  bool weights_array = false;
  graph::PlanOptions plan = {};  // the region map and alignment
  // Headers the generated header includes after dlavm's (a custom op's firmware kernel):
  // "my_kernels.hpp" is written as #include "my_kernels.hpp".
  std::vector<std::string> includes = {};
};

// A symbolic dim of the generated run(): an argument (a param's dim), or the length state
// `state` holds (a growing dim of a state held packed: its counters at `counters`, and `rows`
// positions more after a run). Printed d0, d1, ...
struct FirmwareDim {
  ne::Var var;
  std::optional<std::size_t> state{};
  std::uint64_t counters = 0;
  ne::Expr rows{};
};

// What a run that succeeded leaves in state `state`: a state held packed advances its counters
// (at `counters`) by `rows` positions; any other copies its next value (`bytes` from value
// `from` to value `to`).
struct StateCommit {
  std::size_t state = 0;
  std::optional<std::uint64_t> counters{};
  ne::Expr rows{};
  std::size_t from = 0, to = 0;
  std::int64_t bytes = 0;
};

// A stream the firmware places once.
struct StaticStream {
  std::vector<std::size_t> steps;     // the module's VTA steps it holds
  vta::Stream stream;                 // their words, at planned addresses
  std::vector<std::uint32_t> relocs;  // the instructions that carry a DRAM address
  std::uint64_t insn_addr = 0, uop_addr = 0;
};

// The slot and the work arrays of the replayed steps (the largest step's).
struct ReplayWorkspace {
  std::uint64_t insn_addr = 0, uop_addr = 0;
  std::int64_t insns = 0, uops = 0;
  std::size_t ops = 0, regions = 0, params = 0;
};

// A statement of run(), for module step `step`.
struct PlannedStep {
  enum class Kind : std::uint8_t {
    Static,  // runs static stream `stream` (its first step)
    Joined,  // in the static stream of an earlier step (lite): nothing to run
    Replay,  // replays the step's stream for the run's dims
    Call,    // calls `call`: a host step's firmware kernel
  };
  Kind kind = Kind::Call;
  std::size_t step = 0;
  std::size_t stream = 0;
  graph::FirmwareCall call{};
};

struct FirmwarePlan {
  graph::Module module;
  std::string ns{};
  EmitOptions options{};
  std::vector<FirmwareDim> dims{};
  std::size_t param_dims = 0;  // dims[0, param_dims): run()'s arguments
  graph::MemoryPlan memory{};
  std::vector<StaticStream> streams{};
  std::vector<std::size_t> replayed{};
  ReplayWorkspace workspace{};
  std::vector<PlannedStep> run{};
  std::vector<StateCommit> commits{};
  std::vector<std::uint8_t> weights{};  // the weight region's image
  std::vector<std::uint8_t> insts{};    // the static streams' words, then their micro-ops
  std::array<std::uint32_t, 3> queue_insns{};
  std::uint32_t uop_words = 0;
};

FirmwarePlan plan_firmware(const graph::Module& m, const EmitOptions& options = {});

// The C++ type firmware holds a dtype in ("std::int8_t", "float"); nullopt for dtypes it does
// not hold.
std::optional<std::string> firmware_ctype(DType t);

}  // namespace dlavm::deploy

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/deploy/firmware_plan-inl.hpp>
#endif

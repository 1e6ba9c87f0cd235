// deploy::emit: a built model handed to firmware. It plans the firmware (deploy::plan_firmware,
// deploy/firmware_plan.hpp: plain data) and prints the plan into three files:
//
//   <ns>.hpp            C++17 for firmware: the memory plan's regions and value addresses, the
//                       static VTA streams as constant data (static_assert-ed sizes), the
//                       replays of the symbolic ones (vta::replay_source), and the functions
//                       open, load_params, prepare, run(dims...) and the inputs' and outputs'
//                       addresses; it includes only <dlavm/runtime/...> (and the headers of
//                       EmitOptions::includes) and builds with -fno-exceptions -fno-rtti and no
//                       heap
//   <ns>.weights.bin    the weight region's image (runtime/model_file.hpp's header, then bytes)
//   <ns>.insts.bin      the static streams' words, for firmware that loads them from a file
//
//   deploy::emit(mod, "out", {.ns = "mlp", .lite = true});
//   std::string text = deploy::header_text(deploy::plan_firmware(mod));   // the header alone
//
// The files are named <ns>: EmitOptions::ns, the header's namespace, or the module's name.
// Options (EmitOptions): `ns`, the header's namespace (several models in one firmware); `debug`,
// a log line per step and per transfer of each stream (through Session::set_log); `lite`,
// consecutive VTA steps whose dims are all static written as one stream (one device run);
// `plan`, the region map and alignment; `includes`, headers of custom firmware kernels.
//
// A growing state the module holds packed (a KV cache, graph::ModuleState::packed) keeps its
// length in the cache region: run() takes the other dims only, binds the growing one to the
// positions held and refuses a run the cache has no room for (DimOutOfRange).
//
// A host step without a firmware kernel (its op record's, OpRecord::firmware) is refused,
// naming the node and the op; so are any other growing state, dtypes firmware does not hold
// (only 8, 16, 32 and 64-bit integers and float32) and unwritable files.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/deploy/firmware_plan.hpp>
#include <dlavm/graph/memory_plan.hpp>
#include <dlavm/graph/module.hpp>

#include <cstddef>
#include <string>

namespace dlavm::deploy {

struct EmitResult {
  std::string header, weights, insts;  // the paths written
  std::string weights_array;           // <ns>.weights.hpp, with EmitOptions::weights_array
  graph::MemoryPlan plan;
  std::size_t static_streams = 0;  // streams placed once (lite: groups of steps)
  std::size_t replayed_steps = 0;  // VTA steps replayed for the dims of each run
  std::size_t static_instructions = 0;
  std::size_t header_bytes = 0;
};

EmitResult emit(const graph::Module& m, const std::string& dir, const EmitOptions& options = {});

// The generated header's text, and the files' bytes (runtime/model_file.hpp's header, then the
// payload), of a plan.
std::string header_text(const FirmwarePlan& plan);
std::vector<std::uint8_t> weights_file(const FirmwarePlan& plan);
std::vector<std::uint8_t> insts_file(const FirmwarePlan& plan);
// The weights file as C++ (EmitOptions::weights_array): `<ns>::kWeightsFile`, a constant byte
// array firmware links into its image (flash) and passes to load_params as it would the file.
std::string weights_array_text(const FirmwarePlan& plan);

}  // namespace dlavm::deploy

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/deploy/emit-inl.hpp>
#endif

// vta::Program: a schedule compiled for VTA. It holds what TVM's VTA flow leaves as host code:
// loops the passes could not fold into instructions, around VTA intrinsic calls whose fields
// may still be symbolic. `instantiate` replays those loops for given values of the symbolic
// dims and DRAM addresses and encodes the instruction stream (from a flat plan of the loops
// and fields compiled when the program is built, vta/replay_plan.hpp); `run` does that on a
// Device with host arrays in and out.
//
//   auto prog = vta::build(s, {A, B, C}, env, "vadd");
//   prog.run(dev, {&a, &b, &c}, {{"token", 37}});
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/ne.hpp>
#include <dlavm/runtime/replay.hpp>
#include <dlavm/schedule.hpp>
#include <dlavm/te.hpp>
#include <dlavm/tir.hpp>
#include <dlavm/vta/hw/builder.hpp>
#include <dlavm/vta/hw/dep_tracker.hpp>
#include <dlavm/vta/hw/device.hpp>
#include <dlavm/vta/hw/io.hpp>
#include <dlavm/vta/lower/env.hpp>
#include <dlavm/vta/lower/passes.hpp>
#include <dlavm/vta/replay_plan.hpp>

#include <fmt/format.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace dlavm::vta {

struct RunOptions {
  std::string dump_dir;  // when set: insn.bin, uop.bin, DRAM images and manifest.json here
};

// A run's outcome: the device's result plus the size of the stream it executed.
struct ProgramRun {
  RunResult result;
  std::size_t instructions = 0;
  std::size_t uops = 0;
};

// An upper bound on the words of a program's streams: instructions and micro-ops.
struct StreamBound {
  std::int64_t insns = 0, uops = 0;
};

class Program {
 public:
  Program(Env env, tir::PrimFunc func);

  // Whether parameter k is written by the program.
  bool is_output(std::size_t k) const { return is_output_.count(k) != 0; }

  const std::string& name() const { return func_.name; }
  const tir::PrimFunc& func() const { return func_; }
  const Env& env() const { return env_; }
  const std::unordered_map<const te::BufferNode*, SramSlot>& sram() const { return sram_; }

  // The instruction stream for symbolic-dim values `bindings`, with parameter k at physical
  // DRAM address param_phys[k].
  Stream instantiate(std::span<const ne::Binding> bindings,
                     std::span<const std::uint64_t> param_phys) const;
  // The same, recording in `tape` what reinstantiate needs.
  Stream instantiate(std::span<const ne::Binding> bindings,
                     std::span<const std::uint64_t> param_phys, StreamTape& tape) const;
  // Rewrites `stream`, instantiated with `tape`, for new `bindings` at the same DRAM addresses,
  // where the stream's shape stays: the same loop bounds and branches where they read the dims,
  // so that only transfers' fields change (a decode step's softmax from one position to the
  // next: the sizes of its last chunk of keys). Returns false, changing nothing, where the
  // shape changes or the tape is not valid (StreamTape): instantiate then. The result is the
  // stream instantiate would write, word for word.
  bool reinstantiate(Stream& stream, const StreamTape& tape,
                     std::span<const ne::Binding> bindings) const;
  // The same instructions written to `b`, without the closing FINISH: several programs can
  // share one stream (Builder::barrier between them). The loops that vta::replay_source
  // memoizes are memoized here too: an iteration like the one before it is copied, its DRAM
  // addresses moved (runtime::LoopMemo); `copy_loops` false writes every call instead, the
  // same words.
  void write(Builder& b, std::span<const ne::Binding> bindings,
             std::span<const std::uint64_t> param_phys, bool copy_loops = true) const;

  // The program's on-chip regions (one per SRAM buffer, as its replay indexes them), the
  // micro-op buffer its largest kernel needs, and each memory's element bytes.
  const std::vector<SramRegion>& regions() const { return regions_; }
  std::size_t max_kernel_ops() const { return max_kernel_ops_; }
  // At most how many instructions and micro-ops an instantiation writes, for any values of
  // the symbolic dims within their ranges (what a firmware's stream buffers must hold).
  StreamBound stream_bound() const { return bound_; }
  // How many of the intrinsics' fields an instantiation evaluates through ne::compile, the
  // rest being affine sums over the loop variables and dims, clamped for a block's extent
  // (a diagnostic of instantiation speed).
  std::size_t general_fields() const;
  // How many of its loops an instantiation memoizes (copy_loops above).
  std::size_t memoized_loops() const;
  runtime::ElemBytes elem_bytes() const;
  std::size_t param_index(const te::BufferNode* b) const { return param_index_.at(b); }
  std::uint32_t region_of(const te::BufferNode* b) const { return region_of_.at(b); }
  // What its replay plan reads of it.
  detail::ReplaySource replay_source() const;

  // Allocates the parameters on `dev`, copies `arrays` in, runs, copies every parameter back.
  ProgramRun run(Device& dev, std::span<te::NDArray* const> arrays,
                 std::span<const ne::Binding> bindings = {}, const RunOptions& options = {}) const;
  ProgramRun run(Device& dev, std::initializer_list<te::NDArray*> arrays,
                 std::initializer_list<ne::Binding> bindings = {},
                 const RunOptions& options = {}) const;

 private:
  Stream instantiate_with(std::span<const ne::Binding> bindings,
                          std::span<const std::uint64_t> param_phys, StreamTape* tape) const;
  // ValueError unless there is one address per parameter.
  void check_phys(std::span<const std::uint64_t> param_phys) const;

  Env env_;
  tir::PrimFunc func_;
  std::unordered_map<const te::BufferNode*, SramSlot> sram_;
  std::unordered_map<const te::BufferNode*, std::uint32_t> region_of_;
  std::vector<SramRegion> regions_;
  std::unordered_map<const te::BufferNode*, std::size_t> param_index_;
  std::unordered_set<std::size_t> is_output_;
  std::size_t max_kernel_ops_ = 0;
  StreamBound bound_;
  // the loops and intrinsics flattened for instantiation (shared by copies of the program)
  std::shared_ptr<const detail::ReplayPlan> plan_;
};

// Little-endian two's-complement bytes of an integer array, as VTA's DRAM holds it, and back
// (`a` keeps its dtype and shape; `bytes` holds a.size() elements of its width); the bytes
// written into `out` (ValueError where it holds fewer).
std::vector<std::uint8_t> dram_bytes(const te::NDArray& a);
void dram_bytes(const te::NDArray& a, std::span<std::uint8_t> out);
void from_dram_bytes(std::span<const std::uint8_t> bytes, te::NDArray& a);

// Compiles schedule s for VTA: lowering, the VTA passes, SRAM placement.
Program build(schedule::Schedule& s, const std::vector<te::Tensor>& args, const Env& env,
              std::string name = "main");

}  // namespace dlavm::vta

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/vta/program-inl.hpp>
#endif

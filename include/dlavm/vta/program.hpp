// vta::Program: a schedule compiled for VTA. It holds what TVM's VTA flow leaves as host code:
// loops the passes could not fold into instructions, around VTA intrinsic calls whose fields
// may still be symbolic. `instantiate` replays those loops for given values of the symbolic
// dims and DRAM addresses and encodes the instruction stream; `run` does that on a Device
// with host arrays in and out.
//
//   auto prog = vta::build(s, {A, B, C}, env, "vadd");
//   prog.run(dev, {&a, &b, &c}, {{"token", 37}});
#pragma once

#include <dlavm/core/error.hpp>
#include <dlavm/ne.hpp>
#include <dlavm/schedule.hpp>
#include <dlavm/te.hpp>
#include <dlavm/tir.hpp>
#include <dlavm/vta/builder.hpp>
#include <dlavm/vta/device.hpp>
#include <dlavm/vta/env.hpp>
#include <dlavm/vta/io.hpp>
#include <dlavm/vta/passes.hpp>

#include <fmt/format.h>

#include <cstdint>
#include <cstring>
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

// Where an on-chip buffer lives: its memory and first entry.
struct SramSlot {
  runtime::MemId memory;
  std::int64_t base = 0;  // entries
  std::int64_t entries = 0;
};

namespace detail {

// Assigns every on-chip allocation a range of entries in its SRAM, innermost allocations
// stacked on the enclosing ones; raises CapacityError naming the buffer and the numbers.
class SramAllocator : public tir::StmtVisitor<SramAllocator> {
 public:
  explicit SramAllocator(const Env& env) : env_(env) {}
  std::unordered_map<const te::BufferNode*, SramSlot> slots;

  void visit_allocate(const tir::AllocateNode& n, const tir::Stmt&) {
    const auto& b = n.buffer;
    const auto mem = memory_of(b.scope());
    if (!mem)
      raise<ScheduleError>(
          "buffer '{}' is allocated in '{}': a VTA program keeps intermediates on chip ({}, {}, "
          "{})",
          b.name(), b.scope(), env_.inp_scope, env_.wgt_scope, env_.acc_scope);
    const auto tile = tile_of(*mem);
    const auto elems = ne::bounds(b.size()).max;
    const auto entries = (elems + tile - 1) / tile;
    auto& top = top_[static_cast<int>(*mem)];
    const auto depth = depth_of(*mem);
    const auto bytes_per = static_cast<std::int64_t>(env_.config.elem_bytes(*mem));
    if (top + entries > depth)
      raise<CapacityError>(
          "buffer '{}' needs {} bytes of {} ({} entries of {} bytes); {} of {} bytes are free",
          b.name(), entries * bytes_per, b.scope(), entries, bytes_per, (depth - top) * bytes_per,
          depth * bytes_per);
    slots[b.get()] = {*mem, top, entries};
    top += entries;
    visit(n.body);
    top -= entries;
  }

 private:
  std::optional<runtime::MemId> memory_of(const std::string& scope) const {
    if (scope == env_.inp_scope) return runtime::MemId::Inp;
    if (scope == env_.wgt_scope) return runtime::MemId::Wgt;
    if (scope == env_.acc_scope) return runtime::MemId::Acc;
    return std::nullopt;
  }
  std::int64_t tile_of(runtime::MemId m) const {
    return m == runtime::MemId::Inp   ? env_.inp_tile()
           : m == runtime::MemId::Wgt ? env_.wgt_tile()
                                      : env_.acc_tile();
  }
  std::int64_t depth_of(runtime::MemId m) const {
    return m == runtime::MemId::Inp   ? env_.config.inp_depth()
           : m == runtime::MemId::Wgt ? env_.config.wgt_depth()
                                      : env_.config.acc_depth();
  }
  const Env& env_;
  std::int64_t top_[8] = {};
};

// Rejects computation left for the host: every store must have become a VTA intrinsic.
class CheckMapped : public tir::StmtVisitor<CheckMapped> {
 public:
  void visit_store(const tir::StoreNode& n, const tir::Stmt&) {
    raise<ScheduleError>(
        "stage '{}' is not mapped to VTA: copy it with the dma_copy pragma, compute it with the "
        "alu pragma, or tensorize it with env.gemm (`{}`)",
        n.buffer.name(), n.value);
  }
};

}  // namespace detail

// The TIR of schedule s with VTA intrinsics: te::lower followed by the VTA passes.
inline tir::PrimFunc lower(schedule::Schedule& s, const std::vector<te::Tensor>& args,
                           const Env& env, std::string name = "main") {
  tir::PrimFunc f = te::lower(s, args, std::move(name));
  f.body = InjectDma(env).visit(f.body);
  f.body = InjectAlu(env).visit(f.body);
  f.body = FoldGemm().visit(f.body);
  return f;
}

class Program {
 public:
  Program(Env env, tir::PrimFunc func) : env_(std::move(env)), func_(std::move(func)) {
    detail::CheckMapped().visit(func_.body);
    detail::SramAllocator alloc(env_);
    alloc.visit(func_.body);
    sram_ = std::move(alloc.slots);
    for (std::size_t k = 0; k < func_.flat_params.size(); ++k)
      param_index_[func_.flat_params[k].get()] = k;
    struct Outputs : tir::StmtVisitor<Outputs> {
      std::vector<const te::BufferNode*> written;
      void visit_evaluate(const tir::EvaluateNode& n, const tir::Stmt&) {
        if (const auto* c = n.value.as<te::CallNode>(); c && c->name == intrin::store)
          written.push_back(c->buffers[1].get());
      }
    } outputs;
    outputs.visit(func_.body);
    for (const auto* b : outputs.written) is_output_.insert(param_index_.at(b));
  }

  // Whether parameter k is written by the program.
  bool is_output(std::size_t k) const { return is_output_.count(k) != 0; }

  const std::string& name() const { return func_.name; }
  const tir::PrimFunc& func() const { return func_; }
  const Env& env() const { return env_; }
  const std::unordered_map<const te::BufferNode*, SramSlot>& sram() const { return sram_; }

  // The instruction stream for symbolic-dim values `bindings`, with parameter k at physical
  // DRAM address param_phys[k].
  Stream instantiate(std::span<const ne::Binding> bindings,
                     std::span<const std::uint64_t> param_phys) const {
    if (param_phys.size() != func_.params.size())
      raise<ValueError>("program '{}': {} DRAM addresses given for {} parameters", name(),
                        param_phys.size(), func_.params.size());
    Emitter e(*this, bindings, param_phys);
    e.visit(func_.body);
    e.builder.finish();
    return e.builder.take();
  }

  // Allocates the parameters on `dev`, copies `arrays` in, runs, copies every parameter back.
  ProgramRun run(Device& dev, std::span<te::NDArray* const> arrays,
                 std::span<const ne::Binding> bindings = {}, const RunOptions& options = {}) const {
    if (arrays.size() != func_.params.size())
      raise<ValueError>("program '{}': {} arrays given for {} parameters", name(), arrays.size(),
                        func_.params.size());
    te::IndexEnv env(bindings);
    std::vector<vta::Buffer> buffers;
    std::vector<std::uint64_t> phys;
    struct Release {
      Device& dev;
      std::vector<vta::Buffer>& buffers;
      ~Release() {
        for (const auto& b : buffers) dev.free(b);
      }
    } release{dev, buffers};
    for (std::size_t k = 0; k < arrays.size(); ++k) {
      const auto& p = func_.params[k];
      std::vector<std::int64_t> dims;
      for (const auto& d : p.shape()) dims.push_back(env.eval(d));
      if (arrays[k]->shape() != dims || arrays[k]->dtype() != p.dtype())
        raise<ShapeError>("program '{}': array for '{}' is {}[{}], expected {}[{}]", name(),
                          p.name(), arrays[k]->dtype(), fmt::join(arrays[k]->shape(), ", "),
                          p.dtype(), fmt::join(dims, ", "));
      const auto bytes = pack(*arrays[k]);
      buffers.push_back(dev.alloc(bytes.size()));
      dev.copy_in(buffers.back(), 0, bytes.data(), bytes.size());
      phys.push_back(buffers.back().phys);
    }
    const Stream stream = instantiate(bindings, phys);
    std::vector<ManifestBuffer> dumped;
    if (!options.dump_dir.empty())  // inputs as they were before the run
      for (std::size_t k = 0; k < arrays.size(); ++k)
        if (!is_output(k))
          dumped.push_back(dump_buffer(dev, buffers[k], options.dump_dir, func_.params[k].name(),
                                       func_.params[k].dtype(), false));
    ProgramRun out{dev.run(stream), stream.insns.size(), stream.uops.size()};
    for (std::size_t k = 0; k < arrays.size(); ++k) {
      std::vector<std::uint8_t> bytes(buffers[k].bytes);
      dev.copy_out(buffers[k], 0, bytes.data(), bytes.size());
      unpack(bytes, *arrays[k]);
      if (!options.dump_dir.empty() && is_output(k))
        dumped.push_back(dump_buffer(dev, buffers[k], options.dump_dir, func_.params[k].name(),
                                     func_.params[k].dtype(), true));
    }
    if (!options.dump_dir.empty()) {
      const auto uop = dev.alloc(std::max<std::size_t>(stream.uop_bytes(), 1));
      buffers.push_back(uop);
      dump_stream(options.dump_dir, env_.config, stream, uop.phys, std::move(dumped));
    }
    return out;
  }
  ProgramRun run(Device& dev, std::initializer_list<te::NDArray*> arrays,
                 std::initializer_list<ne::Binding> bindings = {},
                 const RunOptions& options = {}) const {
    return run(dev, std::span<te::NDArray* const>(arrays.begin(), arrays.size()),
               std::span<const ne::Binding>(bindings.begin(), bindings.size()), options);
  }

 private:
  // Little-endian two's-complement bytes of an integer array, as DRAM holds it.
  static std::vector<std::uint8_t> pack(const te::NDArray& a) {
    const auto width = static_cast<std::size_t>(a.dtype().bytes());
    std::vector<std::uint8_t> out(a.size() * width);
    for (std::size_t i = 0; i < a.size(); ++i) {
      const auto v = static_cast<std::uint64_t>(a.data()[i]);
      for (std::size_t b = 0; b < width; ++b)
        out[i * width + b] = static_cast<std::uint8_t>(v >> (8 * b));
    }
    return out;
  }
  static void unpack(std::span<const std::uint8_t> bytes, te::NDArray& a) {
    const auto width = static_cast<std::size_t>(a.dtype().bytes());
    for (std::size_t i = 0; i < a.size(); ++i) {
      std::uint64_t v = 0;
      for (std::size_t b = 0; b < width; ++b) v |= std::uint64_t{bytes[i * width + b]} << (8 * b);
      a.set_flat(i, static_cast<std::int64_t>(v));
    }
  }

  // Replays the host loops and encodes each intrinsic through the Builder, with dependency
  // tokens wherever consecutive instructions belong to different modules (each transition
  // waits for the previous module to finish: correct for any reuse of on-chip buffers).
  class Emitter : public tir::LoopReplay<Emitter> {
   public:
    Emitter(const Program& p, std::span<const ne::Binding> bindings,
            std::span<const std::uint64_t> phys)
        : tir::LoopReplay<Emitter>(bindings), builder(p.env_.config), prog_(p), phys_(phys) {}
    Builder builder;

    void visit_evaluate(const tir::EvaluateNode& n, const tir::Stmt&) {
      const auto* call = n.value.as<te::CallNode>();
      if (call == nullptr)
        raise<ScheduleError>("program '{}': `{}` is not a VTA intrinsic", prog_.name(), n.value);
      std::vector<std::int64_t> a;
      for (const auto& arg : call->args) a.push_back(value(arg));
      const std::string& name = call->name;
      if (name == intrin::load) {
        const auto mem = static_cast<runtime::MemId>(a[0]);
        sync(mem == runtime::MemId::Inp || mem == runtime::MemId::Wgt ? Queue::Load
                                                                      : Queue::Compute);
        builder.load({.memory = mem,
                      .sram = sram(call->buffers[0]) + a[1],
                      .dram = dram(call->buffers[1], mem) + a[2],
                      .y_size = a[3],
                      .x_size = a[4],
                      .x_stride = a[5]});
      } else if (name == intrin::store) {
        sync(Queue::Store);
        builder.store({.sram = sram(call->buffers[0]) + a[1],
                       .dram = dram(call->buffers[1], runtime::MemId::Out) + a[2],
                       .y_size = a[3],
                       .x_size = a[4],
                       .x_stride = a[5]});
      } else if (name == intrin::gemm || name == intrin::gemm_reset) {
        sync(Queue::Compute);
        const bool reset = name == intrin::gemm_reset;
        UopKernel k;
        open_loops(k, a, 3);
        k.push(sram(call->buffers[0]) + a[0], reset ? 0 : sram(call->buffers[1]) + a[1],
               reset ? 0 : sram(call->buffers[2]) + a[2]);
        close_loops(k, a, 3);
        builder.gemm(k, reset);
      } else if (name == intrin::alu) {
        sync(Queue::Compute);
        UopKernel k;
        // args: op, use_imm, imm, dst, src, out_ext, out_dst, out_src, in_ext, in_dst, in_src
        for (std::size_t level : {5u, 8u})
          if (a[level] != 1) k.loop_begin(a[level], a[level + 1], a[level + 2]);
        k.push(sram(call->buffers[0]) + a[3], sram(call->buffers[1]) + a[4]);
        for (std::size_t level : {5u, 8u})
          if (a[level] != 1) k.loop_end();
        if (a[1] != 0)
          builder.alu_imm(k, static_cast<AluOp>(a[0]), a[2]);
        else
          builder.alu(k, static_cast<AluOp>(a[0]));
      } else {
        raise<ScheduleError>("program '{}': unknown intrinsic '{}'", prog_.name(), name);
      }
    }

   private:
    // GEMM args: dst, src, wgt, then (extent, dst, src, wgt) for the outer and inner levels.
    static void open_loops(UopKernel& k, const std::vector<std::int64_t>& a, std::size_t first) {
      for (std::size_t level : {first, first + 4})
        if (a[level] != 1) k.loop_begin(a[level], a[level + 1], a[level + 2], a[level + 3]);
    }
    static void close_loops(UopKernel& k, const std::vector<std::int64_t>& a, std::size_t first) {
      for (std::size_t level : {first, first + 4})
        if (a[level] != 1) k.loop_end();
    }
    std::int64_t value(const te::Expr& e) {
      if (const auto* c = e.as<te::IntImmNode>()) return c->value;
      if (const auto* i = e.as<te::IndexNode>()) return env_.eval(i->index);
      raise<ScheduleError>("program '{}': intrinsic argument `{}` is not an index", prog_.name(),
                           e);
    }
    std::int64_t sram(const te::Buffer& b) const {
      auto it = prog_.sram_.find(b.get());
      if (it == prog_.sram_.end())
        raise<ScheduleError>("program '{}': buffer '{}' has no SRAM placement", prog_.name(),
                             b.name());
      return it->second.base;
    }
    std::int64_t dram(const te::Buffer& b, runtime::MemId mem) const {
      auto it = prog_.param_index_.find(b.get());
      if (it == prog_.param_index_.end())
        raise<ScheduleError>("program '{}': buffer '{}' is not a parameter in DRAM", prog_.name(),
                             b.name());
      return builder.dram_elem(phys_[it->second], mem);
    }
    void sync(Queue to) {
      if (last_ && *last_ != to) {
        const auto from = *last_;
        const auto step = [&](Queue a, Queue b) {
          builder.dep_push(a, b);
          builder.dep_pop(a, b);
        };
        if ((from == Queue::Load && to == Queue::Store) ||
            (from == Queue::Store && to == Queue::Load)) {
          step(from, Queue::Compute);
          step(Queue::Compute, to);
        } else {
          step(from, to);
        }
      }
      last_ = to;
    }

    const Program& prog_;
    std::span<const std::uint64_t> phys_;
    std::optional<Queue> last_;
  };

  Env env_;
  tir::PrimFunc func_;
  std::unordered_map<const te::BufferNode*, SramSlot> sram_;
  std::unordered_map<const te::BufferNode*, std::size_t> param_index_;
  std::unordered_set<std::size_t> is_output_;
};

// Compiles schedule s for VTA: lowering, the VTA passes, SRAM placement.
inline Program build(schedule::Schedule& s, const std::vector<te::Tensor>& args, const Env& env,
                     std::string name = "main") {
  return Program(env, lower(s, args, env, std::move(name)));
}

}  // namespace dlavm::vta

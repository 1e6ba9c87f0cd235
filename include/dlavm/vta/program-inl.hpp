// Definitions for dlavm/vta/program.hpp (see core/api.hpp).
#pragma once

#include <dlavm/vta/program.hpp>

namespace dlavm::vta {

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
class CheckNoStores : public tir::StmtVisitor<CheckNoStores> {
 public:
  CheckNoStores(const Env& env, const tir::Stmt& root) : env_(env), root_(root) {}
  void visit_store(const tir::StoreNode& n, const tir::Stmt&) {
    raise<ScheduleError>("{}", unmapped_stage_message(root_, n.buffer, env_));
  }

 private:
  const Env& env_;
  const tir::Stmt& root_;
};

}  // namespace detail

// Replays the host loops and encodes each intrinsic through the Builder, with the
// dependency tokens its data hazards need (DepTracker).
class Program::Emitter : public tir::LoopReplay<Emitter> {
 public:
  Emitter(const Program& p, std::span<const ne::Binding> bindings,
          std::span<const std::uint64_t> phys)
      : tir::LoopReplay<Emitter>(bindings),
        builder(p.env_.config),
        prog_(p),
        phys_(phys),
        deps_(p.regions_) {}
  Builder builder;

  void visit_attr(const tir::AttrNode& n, const tir::Stmt& s) {
    if (n.key != intrin::uop_kernel) return tir::LoopReplay<Emitter>::visit_attr(n, s);
    // One GEMM or ALU instruction: collect its loop levels and micro-ops, then emit.
    kernel_ = UopKernel{};
    kernel_call_ = nullptr;
    kernel_empty_ = false;
    in_kernel_ = true;
    visit(n.body);
    in_kernel_ = false;
    // A loop level or unrolled loop of no iterations (the last block of a symbolic dim):
    // nothing to compute.
    if (kernel_empty_ || kernel_call_ == nullptr) return;
    const auto& c = *kernel_call_;
    accesses_.clear();
    if (c.name == intrin::gemm) {
      accesses_ = {{region(c.buffers[0]), true},
                   {region(c.buffers[1]), false},
                   {region(c.buffers[2]), false}};
    } else if (c.name == intrin::gemm_reset) {
      accesses_ = {{region(c.buffers[0]), true}};
    } else {
      accesses_ = {{region(c.buffers[0]), true}, {region(c.buffers[1]), false}};
    }
    deps_.before(builder, Queue::Compute, accesses_);
    if (c.name == intrin::alu) {
      const auto op = static_cast<AluOp>(value(c.args[0]));
      if (value(c.args[1]) != 0)
        builder.alu_imm(kernel_, op, value(c.args[2]));
      else
        builder.alu(kernel_, op);
    } else {
      builder.gemm(kernel_, c.name == intrin::gemm_reset);
    }
    deps_.after(Queue::Compute, static_cast<std::int64_t>(builder.size()) - 1, accesses_);
  }

  void visit_evaluate(const tir::EvaluateNode& n, const tir::Stmt&) {
    const auto* call = n.value.as<te::CallNode>();
    if (call == nullptr)
      raise<ScheduleError>("program '{}': `{}` is not a VTA intrinsic", prog_.name(), n.value);
    const std::string& name = call->name;
    if (in_kernel_) {
      if (kernel_empty_) return;
      if (name == intrin::uop_loop_begin) {
        const auto extent = value(call->args[0]);
        if (extent < 1) {
          kernel_empty_ = true;
          return;
        }
        kernel_.loop_begin(extent, value(call->args[1]), value(call->args[2]),
                           value(call->args[3]));
      } else if (name == intrin::uop_loop_end) {
        kernel_.loop_end();
      } else if (name == intrin::gemm) {
        kernel_call_ = call;
        kernel_.push(sram(call->buffers[0]) + value(call->args[0]),
                     sram(call->buffers[1]) + value(call->args[1]),
                     sram(call->buffers[2]) + value(call->args[2]));
      } else if (name == intrin::gemm_reset) {
        kernel_call_ = call;
        kernel_.push(sram(call->buffers[0]) + value(call->args[0]), 0, 0);
      } else if (name == intrin::alu) {
        kernel_call_ = call;
        kernel_.push(sram(call->buffers[0]) + value(call->args[3]),
                     sram(call->buffers[1]) + value(call->args[4]));
      } else {
        raise<ScheduleError>("program '{}': '{}' inside a micro-op kernel", prog_.name(), name);
      }
      return;
    }
    if (name == intrin::load) {
      const auto mem = static_cast<MemId>(value(call->args[0]));
      const Queue q = mem == MemId::Inp || mem == MemId::Wgt ? Queue::Load : Queue::Compute;
      accesses_ = {{region(call->buffers[0]), true}};
      deps_.before(builder, q, accesses_);
      // A block of padding rows only reads no DRAM: its address is the tensor's start.
      const auto y_size = non_negative(value(call->args[3]), call, "y_size");
      builder.load({.memory = mem,
                    .sram = sram(call->buffers[0]) + value(call->args[1]),
                    .dram = dram(call->buffers[1], mem) + (y_size ? value(call->args[2]) : 0),
                    .y_size = y_size,
                    .x_size = positive(value(call->args[4]), call, "x_size"),
                    .x_stride = value(call->args[5]),
                    .y_pad_0 = value(call->args[6]),
                    .y_pad_1 = value(call->args[7]),
                    .x_pad_0 = value(call->args[8]),
                    .x_pad_1 = value(call->args[9])});
      deps_.after(q, static_cast<std::int64_t>(builder.size()) - 1, accesses_);
    } else if (name == intrin::store) {
      accesses_ = {{region(call->buffers[0]), false}};
      deps_.before(builder, Queue::Store, accesses_);
      builder.store({.sram = sram(call->buffers[0]) + value(call->args[1]),
                     .dram = dram(call->buffers[1], MemId::Out) + value(call->args[2]),
                     .y_size = non_negative(value(call->args[3]), call, "y_size"),
                     .x_size = positive(value(call->args[4]), call, "x_size"),
                     .x_stride = value(call->args[5])});
      deps_.after(Queue::Store, static_cast<std::int64_t>(builder.size()) - 1, accesses_);
    } else {
      raise<ScheduleError>("program '{}': intrinsic '{}' outside a micro-op kernel", prog_.name(),
                           name);
    }
  }

 private:
  std::int64_t value(const te::Expr& e) {
    if (const auto* c = e.as<te::IntImmNode>()) return c->value;
    if (const auto* i = e.as<te::IndexNode>()) return env_.eval(i->index);
    raise<ScheduleError>("program '{}': intrinsic argument `{}` is not an index", prog_.name(), e);
  }
  // x_size = 0 makes a transfer a no-op on VTA: for a padded block it would also drop the
  // padding, so an empty row is an error, not a silent no-op. (Rows of padding only, with
  // y_size = 0, are what VTA's input loads write.)
  std::int64_t positive(std::int64_t v, const te::CallNode* call, const char* field) const {
    return v < 1 ? empty(v, call, field) : v;
  }
  std::int64_t non_negative(std::int64_t v, const te::CallNode* call, const char* field) const {
    return v < 0 ? empty(v, call, field) : v;
  }
  [[noreturn]] std::int64_t empty(std::int64_t v, const te::CallNode* call,
                                  const char* field) const {
    raise<ValueError>(
        "program '{}': {} of '{}' -> '{}' is {} for these values; the block holds no data "
        "(all padding or empty), which a VTA transfer cannot express",
        prog_.name(), field, call->buffers[call->name == intrin::load ? 1 : 0].name(),
        call->buffers[call->name == intrin::load ? 0 : 1].name(), v);
  }
  std::int64_t sram(const te::Buffer& b) const {
    auto it = prog_.sram_.find(b.get());
    if (it == prog_.sram_.end())
      raise<ScheduleError>("program '{}': buffer '{}' has no SRAM placement", prog_.name(),
                           b.name());
    return it->second.base;
  }
  std::uint32_t region(const te::Buffer& b) const {
    auto it = prog_.region_of_.find(b.get());
    if (it == prog_.region_of_.end())
      raise<ScheduleError>("program '{}': buffer '{}' has no SRAM placement", prog_.name(),
                           b.name());
    return it->second;
  }
  std::int64_t dram(const te::Buffer& b, MemId mem) const {
    auto it = prog_.param_index_.find(b.get());
    if (it == prog_.param_index_.end())
      raise<ScheduleError>("program '{}': buffer '{}' is not a parameter in DRAM", prog_.name(),
                           b.name());
    return builder.dram_elem(phys_[it->second], mem);
  }

  const Program& prog_;
  std::span<const std::uint64_t> phys_;
  DepTracker deps_;
  std::vector<RegionAccess> accesses_;
  UopKernel kernel_;
  const te::CallNode* kernel_call_ = nullptr;
  bool in_kernel_ = false;
  bool kernel_empty_ = false;
};

DLAVM_INLINE Program::Program(Env env, tir::PrimFunc func)
    : env_(std::move(env)), func_(std::move(func)) {
  detail::CheckNoStores(env_, func_.body).visit(func_.body);
  detail::SramAllocator alloc(env_);
  alloc.visit(func_.body);
  sram_ = std::move(alloc.slots);
  std::vector<SramRegion> regions;
  for (const auto& [buf, slot] : sram_) {
    region_of_[buf] = static_cast<std::uint32_t>(regions.size());
    regions.push_back({slot.memory, slot.base, slot.base + slot.entries});
  }
  regions_ = std::move(regions);
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

DLAVM_INLINE Program build(schedule::Schedule& s, const std::vector<te::Tensor>& args,
                           const Env& env, std::string name) {
  return Program(env, lower(s, args, env, std::move(name)));
}

}  // namespace dlavm::vta

namespace dlavm::vta {

DLAVM_INLINE Stream Program::instantiate(std::span<const ne::Binding> bindings,
                                         std::span<const std::uint64_t> param_phys) const {
  if (param_phys.size() != func_.params.size())
    raise<ValueError>("program '{}': {} DRAM addresses given for {} parameters", name(),
                      param_phys.size(), func_.params.size());
  Emitter e(*this, bindings, param_phys);
  e.visit(func_.body);
  e.builder.finish();
  return e.builder.take();
}

DLAVM_INLINE ProgramRun Program::run(Device& dev, std::span<te::NDArray* const> arrays,
                                     std::span<const ne::Binding> bindings,
                                     const RunOptions& options) const {
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
      raise<ShapeError>("program '{}': array for '{}' is {}[{}], expected {}[{}]", name(), p.name(),
                        arrays[k]->dtype(), fmt::join(arrays[k]->shape(), ", "), p.dtype(),
                        fmt::join(dims, ", "));
    const auto bytes = dram_bytes(*arrays[k]);
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
    from_dram_bytes(bytes, *arrays[k]);
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

DLAVM_INLINE ProgramRun Program::run(Device& dev, std::initializer_list<te::NDArray*> arrays,
                                     std::initializer_list<ne::Binding> bindings,
                                     const RunOptions& options) const {
  return run(dev, std::span<te::NDArray* const>(arrays.begin(), arrays.size()),
             std::span<const ne::Binding>(bindings.begin(), bindings.size()), options);
}

DLAVM_INLINE std::vector<std::uint8_t> dram_bytes(const te::NDArray& a) {
  const auto width = static_cast<std::size_t>(a.dtype().bytes());
  const auto data = a.data();
  std::vector<std::uint8_t> out(data.size() * width);
  for (std::size_t i = 0; i < data.size(); ++i) {
    const auto v = static_cast<std::uint64_t>(data[i]);
    for (std::size_t b = 0; b < width; ++b)
      out[i * width + b] = static_cast<std::uint8_t>(v >> (8 * b));
  }
  return out;
}

DLAVM_INLINE void from_dram_bytes(std::span<const std::uint8_t> bytes, te::NDArray& a) {
  const auto width = static_cast<std::size_t>(a.dtype().bytes());
  auto data = a.data();
  if (bytes.size() < data.size() * width)
    raise<ValueError>("from_dram_bytes: {} bytes for {} elements of {}", bytes.size(), data.size(),
                      a.dtype());
  for (std::size_t i = 0; i < data.size(); ++i) {
    std::uint64_t v = 0;
    for (std::size_t b = 0; b < width; ++b) v |= std::uint64_t{bytes[i * width + b]} << (8 * b);
    data[i] = a.dtype().wrap(static_cast<std::int64_t>(v));
  }
}

}  // namespace dlavm::vta

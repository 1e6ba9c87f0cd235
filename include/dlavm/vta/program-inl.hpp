// Definitions for dlavm/vta/program.hpp (see core/api.hpp).
#pragma once

#include <dlavm/vta/program.hpp>

#include <algorithm>
#include <cstdint>

namespace dlavm::vta {

namespace detail {

// Assigns every on-chip allocation a range of entries in its SRAM, innermost allocations
// stacked on the enclosing ones; raises CapacityError naming the buffer and the numbers, and
// ScheduleError where one buffer is allocated at two places (its accesses have one address).
class SramAllocator : public tir::StmtVisitor<SramAllocator> {
 public:
  explicit SramAllocator(const Env& env) : env_(env) {}
  std::unordered_map<const te::BufferNode*, SramSlot> slots;
  std::vector<const te::BufferNode*> order;  // the buffers in program order

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
    const SramSlot slot{*mem, top, entries, arm_};
    if (const auto it = slots.find(b.get()); it == slots.end()) {
      order.push_back(b.get());
      slots.emplace(b.get(), slot);
    } else if (it->second.base != top || it->second.entries != entries) {
      // (its accesses are addressed by one slot)
      raise<ScheduleError>(
          "buffer '{}' is allocated twice in {}: {} entries at entry {}, {} at entry {}", b.name(),
          b.scope(), it->second.entries, it->second.base, entries, top);
    } else if (it->second.arm != arm_) {
      // allocated in both arms of a condition on the dims (one buffer the arms share): it
      // lives in whichever runs, apart from neither arm's buffers
      it->second.arm = 0;
    }
    top += entries;
    visit(n.body);
    top -= entries;
  }
  // A condition outside every loop and every other condition (tir::specialize's) is on the
  // dims alone: one of its arms runs, and each arm's buffers start where the other's do.
  void visit_if(const tir::IfThenElseNode& n, const tir::Stmt& s) {
    if (loops_ > 0 || arm_ != 0) return tir::StmtVisitor<SramAllocator>::visit_if(n, s);
    const std::uint32_t k = ++conditions_;
    arm_ = 2 * k - 1;
    visit(n.then_case);
    arm_ = 2 * k;
    if (n.else_case.defined()) visit(n.else_case);
    arm_ = 0;
  }
  void visit_for(const tir::ForNode& n, const tir::Stmt& s) {
    ++loops_;
    tir::StmtVisitor<SramAllocator>::visit_for(n, s);
    --loops_;
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
  int loops_ = 0;
  std::uint32_t conditions_ = 0, arm_ = 0;
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

// An upper bound on the words any instantiation writes, from the loops' largest extents: a
// transfer writes one instruction, a kernel at most two (a LOAD UOP and itself) and its
// micro-ops; the dependency tokens a hazard needs ride on those instructions (a pop is
// pending only until its module's next instruction, which the same intrinsic writes), and
// FINISH with the token NOPs before it adds at most kFinish. Saturates at kLimit.
class StreamBounds : public tir::StmtVisitor<StreamBounds> {
 public:
  static constexpr std::int64_t kFinish = 8, kLimit = std::int64_t{1} << 40;
  explicit StreamBounds(std::size_t kernel_ops)
      : kernel_ops_(static_cast<std::int64_t>(kernel_ops)) {}

  StreamBound of(const tir::Stmt& body) {
    visit(body);
    return {std::min(insns_ + kFinish, kLimit), uops_};
  }
  void visit_for(const tir::ForNode& n, const tir::Stmt&) {
    const auto before_i = insns_, before_u = uops_;
    insns_ = uops_ = 0;
    visit(n.body);
    const auto extent = std::max<std::int64_t>(ne::bounds(n.extent).max, 0);
    insns_ = before_i + times(insns_, extent);
    uops_ = before_u + times(uops_, extent);
  }
  void visit_if(const tir::IfThenElseNode& n, const tir::Stmt&) {
    const auto before_i = insns_, before_u = uops_;
    insns_ = uops_ = 0;
    visit(n.then_case);
    const auto then_i = insns_, then_u = uops_;
    insns_ = uops_ = 0;
    if (n.else_case.defined()) visit(n.else_case);
    insns_ = before_i + std::max(then_i, insns_);
    uops_ = before_u + std::max(then_u, uops_);
  }
  void visit_attr(const tir::AttrNode& n, const tir::Stmt& s) {
    if (n.key != intrin::uop_kernel) return tir::StmtVisitor<StreamBounds>::visit_attr(n, s);
    insns_ = std::min(insns_ + 2, kLimit);
    uops_ = std::min(uops_ + kernel_ops_, kLimit);
  }
  void visit_evaluate(const tir::EvaluateNode&, const tir::Stmt&) {
    insns_ = std::min(insns_ + 1, kLimit);
  }

 private:
  static std::int64_t times(std::int64_t a, std::int64_t b) {
    return a == 0 || b <= kLimit / a ? std::min(a * b, kLimit) : kLimit;
  }
  std::int64_t kernel_ops_;
  std::int64_t insns_ = 0, uops_ = 0;
};

}  // namespace detail

DLAVM_INLINE Program::Program(Env env, tir::PrimFunc func)
    : env_(std::move(env)), func_(std::move(func)) {
  detail::CheckNoStores(env_, func_.body).visit(func_.body);
  detail::SramAllocator alloc(env_);
  alloc.visit(func_.body);
  sram_ = std::move(alloc.slots);
  // regions in program order: the same indices in every process (generated replays use them)
  std::vector<SramRegion> regions;
  for (const auto* buf : alloc.order) {
    const SramSlot& slot = sram_.at(buf);
    region_of_[buf] = static_cast<std::uint32_t>(regions.size());
    regions.push_back({slot.memory, slot.base, slot.base + slot.entries, slot.arm});
  }
  runtime::with_overlap_masks(regions.data(), regions.size());
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
  // The micro-op buffer a replay needs: the largest kernel at the dims' maxima, or past the
  // micro-op SRAM (a kernel that large fails either way).
  const auto cap = static_cast<std::int64_t>(env_.config.uop_depth()) + 1;
  struct KernelOps : tir::StmtVisitor<KernelOps> {
    std::int64_t cap = 0, count = 0, most = 0;
    bool inside = false;
    void visit_attr(const tir::AttrNode& n, const tir::Stmt& s) {
      if (n.key != intrin::uop_kernel) return tir::StmtVisitor<KernelOps>::visit_attr(n, s);
      count = 0;
      inside = true;
      visit(n.body);
      inside = false;
      most = std::max(most, count);
    }
    void visit_for(const tir::ForNode& n, const tir::Stmt&) {
      if (!inside) return visit(n.body);
      const auto before = count;
      count = 0;
      visit(n.body);
      const auto extent = std::max<std::int64_t>(ne::bounds(n.extent).max, 0);
      count = before + (count == 0 || extent <= cap / count ? count * extent : cap);
    }
    void visit_if(const tir::IfThenElseNode& n, const tir::Stmt&) {
      const auto before = count;
      count = 0;
      visit(n.then_case);
      const auto then_count = count;
      count = 0;
      if (n.else_case.defined()) visit(n.else_case);
      count = before + std::max(then_count, count);
    }
    void visit_evaluate(const tir::EvaluateNode& n, const tir::Stmt&) {
      const auto* c = n.value.as<te::CallNode>();
      if (inside && c != nullptr &&
          (c->name == intrin::gemm || c->name == intrin::gemm_reset || c->name == intrin::alu))
        ++count;
    }
  } kernel_ops;
  kernel_ops.cap = cap;
  kernel_ops.visit(func_.body);
  max_kernel_ops_ = static_cast<std::size_t>(std::min(kernel_ops.most, cap));
  bound_ = detail::StreamBounds(max_kernel_ops_).of(func_.body);
  plan_ = std::make_shared<const detail::ReplayPlan>(replay_source());
}

DLAVM_INLINE detail::ReplaySource Program::replay_source() const {
  return {func_, env_, sram_, region_of_, regions_, max_kernel_ops_, elem_bytes()};
}

DLAVM_INLINE std::size_t Program::general_fields() const { return plan_->general_fields(); }

DLAVM_INLINE std::size_t Program::memoized_loops() const { return plan_->memoized_loops(); }

DLAVM_INLINE runtime::ElemBytes Program::elem_bytes() const {
  runtime::ElemBytes e;
  for (int m = 0; m < runtime::kMemIdCount; ++m)
    e.of[m] = env_.config.elem_bytes(static_cast<runtime::MemId>(m));
  return e;
}

DLAVM_INLINE Program build(schedule::Schedule& s, const std::vector<te::Tensor>& args,
                           const Env& env, std::string name) {
  return Program(env, lower(s, args, env, std::move(name)));
}

}  // namespace dlavm::vta

namespace dlavm::vta {

DLAVM_INLINE Stream Program::instantiate(std::span<const ne::Binding> bindings,
                                         std::span<const std::uint64_t> param_phys) const {
  return instantiate_with(bindings, param_phys, nullptr);
}

DLAVM_INLINE Stream Program::instantiate(std::span<const ne::Binding> bindings,
                                         std::span<const std::uint64_t> param_phys,
                                         StreamTape& tape) const {
  return instantiate_with(bindings, param_phys, &tape);
}

DLAVM_INLINE Stream Program::instantiate_with(std::span<const ne::Binding> bindings,
                                              std::span<const std::uint64_t> param_phys,
                                              StreamTape* tape) const {
  check_phys(param_phys);
  Builder b(env_.config);
  const auto [insns, uops] = plan_->last_size();
  b.reserve(insns, uops);
  plan_->write(replay_source(), b, bindings, param_phys, true, tape);
  b.finish();
  plan_->set_last_size(b.size(), b.stream().uops.size());
  return b.take();
}

DLAVM_INLINE bool Program::reinstantiate(Stream& stream, const StreamTape& tape,
                                         std::span<const ne::Binding> bindings) const {
  return plan_->repatch(replay_source(), stream.insns, tape, bindings);
}

DLAVM_INLINE void Program::check_phys(std::span<const std::uint64_t> param_phys) const {
  if (param_phys.size() != func_.params.size())
    raise<ValueError>("program '{}': {} DRAM addresses given for {} parameters", name(),
                      param_phys.size(), func_.params.size());
}

DLAVM_INLINE void Program::write(Builder& b, std::span<const ne::Binding> bindings,
                                 std::span<const std::uint64_t> param_phys, bool copy_loops) const {
  check_phys(param_phys);
  plan_->write(replay_source(), b, bindings, param_phys, copy_loops);
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
  // the buffers before the run: the inputs' images, the outputs' initial images
  std::vector<std::string> initial(arrays.size());
  if (!options.dump_dir.empty()) {
    for (std::size_t k = 0; k < arrays.size(); ++k) {
      const auto& p = func_.params[k];
      if (!is_output(k))
        dumped.push_back(
            dump_buffer(dev, buffers[k], options.dump_dir, p.name(), p.dtype(), false));
      else
        initial[k] =
            dump_buffer(dev, buffers[k], options.dump_dir, p.name() + ".initial", p.dtype(), false)
                .file;
    }
  }
  ProgramRun out{dev.run(stream), stream.insns.size(), stream.uops.size()};
  for (std::size_t k = 0; k < arrays.size(); ++k) {
    std::vector<std::uint8_t> bytes(buffers[k].bytes);
    dev.copy_out(buffers[k], 0, bytes.data(), bytes.size());
    from_dram_bytes(bytes, *arrays[k]);
    if (!options.dump_dir.empty() && is_output(k)) {
      dumped.push_back(dump_buffer(dev, buffers[k], options.dump_dir, func_.params[k].name(),
                                   func_.params[k].dtype(), true));
      dumped.back().initial_file = initial[k];
    }
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

DLAVM_INLINE void dram_bytes(const te::NDArray& a, std::span<std::uint8_t> out) {
  const auto width = static_cast<std::size_t>(a.dtype().bytes());
  const auto data = a.data();
  if (out.size() < data.size() * width)
    raise<ValueError>("dram_bytes: {} bytes for {} elements of {}", out.size(), data.size(),
                      a.dtype());
  // one-byte elements as a plain narrowing loop the compiler vectorizes (a decode step moves
  // its scores and probabilities through here every step)
  if (width == 1) {
    std::transform(data.begin(), data.end(), out.begin(),
                   [](std::int64_t v) { return static_cast<std::uint8_t>(v); });
    return;
  }
  for (std::size_t i = 0; i < data.size(); ++i) {
    const auto v = static_cast<std::uint64_t>(data[i]);
    for (std::size_t b = 0; b < width; ++b)
      out[i * width + b] = static_cast<std::uint8_t>(v >> (8 * b));
  }
}

DLAVM_INLINE std::vector<std::uint8_t> dram_bytes(const te::NDArray& a) {
  std::vector<std::uint8_t> out(a.size() * static_cast<std::size_t>(a.dtype().bytes()));
  dram_bytes(a, out);
  return out;
}

DLAVM_INLINE void from_dram_bytes(std::span<const std::uint8_t> bytes, te::NDArray& a) {
  const auto width = static_cast<std::size_t>(a.dtype().bytes());
  auto data = a.data();
  if (bytes.size() < data.size() * width)
    raise<ValueError>("from_dram_bytes: {} bytes for {} elements of {}", bytes.size(), data.size(),
                      a.dtype());
  if (a.dtype() == DType::int8() || a.dtype() == DType::uint8()) {
    const bool is_signed = a.dtype() == DType::int8();
    std::transform(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(data.size()),
                   data.begin(), [is_signed](std::uint8_t b) {
                     return is_signed ? std::int64_t{static_cast<std::int8_t>(b)} : std::int64_t{b};
                   });
    return;
  }
  for (std::size_t i = 0; i < data.size(); ++i) {
    std::uint64_t v = 0;
    for (std::size_t b = 0; b < width; ++b) v |= std::uint64_t{bytes[i * width + b]} << (8 * b);
    data[i] = a.dtype().wrap(static_cast<std::int64_t>(v));
  }
}

}  // namespace dlavm::vta

// Definitions for dlavm/vta/hw/simulator.hpp (see core/api.hpp).
#pragma once

#include <dlavm/vta/hw/check_stream.hpp>
#include <dlavm/vta/hw/dispatch.hpp>
#include <dlavm/vta/hw/simulator.hpp>

#include <algorithm>
#include <bit>

namespace dlavm::vta::detail {

inline std::int32_t wrap_add(std::int32_t a, std::int32_t b) {
  return static_cast<std::int32_t>(static_cast<std::uint32_t>(a) + static_cast<std::uint32_t>(b));
}

// One micro-op of GEMM: acc[b][o] += sum_k inp[b][k] * wgt[o][k]. With compile-time extents
// (B, BI, BO > 0) the k loop is fully unrolled and vectorized; 0 means run-time extents.
template <int B, int BI, int BO>
inline void gemm_tile(std::int32_t* __restrict acc, const std::int8_t* __restrict inp,
                      const std::int8_t* __restrict wgt, int batch, int block_in, int block_out) {
  const int nb = B > 0 ? B : batch, ni = BI > 0 ? BI : block_in, no = BO > 0 ? BO : block_out;
  for (int b = 0; b < nb; ++b) {
    const std::int8_t* x = inp + b * ni;
    for (int o = 0; o < no; ++o) {
      const std::int8_t* w = wgt + o * ni;
      std::int32_t sum = 0;
      for (int k = 0; k < ni; ++k) sum += static_cast<std::int32_t>(x[k]) * w[k];
      acc[b * no + o] = wrap_add(acc[b * no + o], sum);
    }
  }
}

// A little-endian 32-bit word from DRAM bytes.
inline std::uint32_t le32(const std::byte* s) {
  std::uint32_t w = 0;
  if constexpr (std::endian::native == std::endian::little) {
    std::memcpy(&w, s, sizeof(w));
  } else {
    for (int b = 0; b < 4; ++b) w |= std::uint32_t(std::to_integer<std::uint8_t>(s[b])) << (8 * b);
  }
  return w;
}

// The padded box a LOAD writes, row by row: y_pad_0 zero rows, then per data row x_pad_0 zero
// elements, `convert(dst, dram_row, x_size)` and x_pad_1 zero elements, then y_pad_1 zero rows.
// `lanes` values of T make one SRAM element of `eb` DRAM bytes. Without column padding and
// with rows adjacent in DRAM (x_stride = x_size), the data rows are one conversion.
template <class T, class Convert>
void load_box(T* sram, std::size_t lanes, const InsnFields& f, const std::byte* src, std::size_t eb,
              Convert&& convert) {
  const auto zero = [](T* p, std::size_t n) { return n ? std::fill_n(p, n, T{}) : p; };
  const std::size_t row = (std::size_t{f.x_pad_0} + f.x_size + f.x_pad_1) * lanes;
  T* dst = zero(sram + std::size_t{f.sram_base} * lanes, f.y_pad_0 * row);
  if (f.y_size > 0 && f.x_pad_0 == 0 && f.x_pad_1 == 0 &&
      (f.x_stride == f.x_size || f.y_size == 1)) {
    convert(dst, src, std::size_t{f.y_size} * f.x_size);
    dst += std::size_t{f.y_size} * row;
  } else {
    for (std::size_t y = 0; y < f.y_size; ++y) {
      dst = zero(dst, f.x_pad_0 * lanes);
      convert(dst, src + y * f.x_stride * eb, std::size_t{f.x_size});
      dst = zero(dst + f.x_size * lanes, f.x_pad_1 * lanes);
    }
  }
  zero(dst, f.y_pad_1 * row);
}

inline std::int32_t alu_shr(std::int32_t x, std::int32_t y) {
  // VTA_ISA.md: x >> y for y >= 0, x << -y for y < 0. Shifts by 32 or more saturate (all
  // sign bits to the right, zero to the left), where C++ would leave them undefined.
  if (y >= 0) return y >= 32 ? (x < 0 ? -1 : 0) : x >> y;
  if (y <= -32) return 0;
  return static_cast<std::int32_t>(static_cast<std::uint32_t>(x) << -y);
}

}  // namespace dlavm::vta::detail

namespace dlavm::vta {

template <int B, int BI, int BO>
void Simulator::gemm_loops(const InsnFields& f) {
  const std::size_t acc_lanes = std::size_t(batch_) * block_out_;
  const std::size_t inp_lanes = std::size_t(batch_) * block_in_;
  const std::size_t wgt_lanes = std::size_t(block_out_) * block_in_;
  for (std::uint32_t o = 0; o < f.iter_out; ++o) {
    for (std::uint32_t n = 0; n < f.iter_in; ++n) {
      const std::uint32_t d0 = o * f.dst_factor_out + n * f.dst_factor_in;
      const std::uint32_t s0 = o * f.src_factor_out + n * f.src_factor_in;
      const std::uint32_t w0 = o * f.wgt_factor_out + n * f.wgt_factor_in;
      for (std::uint32_t u = f.uop_bgn; u < f.uop_end; ++u) {
        const Uop& op = uop_[u];
        detail::gemm_tile<B, BI, BO>(
            acc_.data() + (op.dst + d0) * acc_lanes, inp_.data() + (op.src + s0) * inp_lanes,
            wgt_.data() + (op.wgt + w0) * wgt_lanes, batch_, block_in_, block_out_);
      }
    }
  }
}

template <class Op>
void Simulator::alu_loops(const InsnFields& f, Op op) {
  const std::size_t lanes = std::size_t(batch_) * block_out_;
  for (std::uint32_t o = 0; o < f.iter_out; ++o) {
    for (std::uint32_t n = 0; n < f.iter_in; ++n) {
      const std::uint32_t d0 = o * f.dst_factor_out + n * f.dst_factor_in;
      const std::uint32_t s0 = o * f.src_factor_out + n * f.src_factor_in;
      for (std::uint32_t u = f.uop_bgn; u < f.uop_end; ++u) {
        std::int32_t* dst = acc_.data() + (uop_[u].dst + d0) * lanes;
        if (f.use_imm) {
          const std::int32_t y = f.imm;
          for (std::size_t k = 0; k < lanes; ++k) dst[k] = op(dst[k], y);
        } else {
          const std::int32_t* src = acc_.data() + (uop_[u].src + s0) * lanes;
          for (std::size_t k = 0; k < lanes; ++k) dst[k] = op(dst[k], src[k]);
        }
      }
    }
  }
}

DLAVM_INLINE Simulator::Simulator(const Config& config) : config_(config) {
  config_.validate();
  if (config_.log_inp_width != 3 || config_.log_wgt_width != 3 || config_.log_acc_width != 5)
    raise<ConfigError>(
        "simulator: LOG_INP_WIDTH = {}, LOG_WGT_WIDTH = {}, LOG_ACC_WIDTH = {}; only int8 "
        "inputs and weights with int32 accumulators (3, 3, 5) are simulated",
        config_.log_inp_width, config_.log_wgt_width, config_.log_acc_width);
  if (config_.log_out_width < 3)
    raise<ConfigError>("simulator: LOG_OUT_WIDTH = {}; outputs of 8, 16 or 32 bits only",
                       config_.log_out_width);
  const auto bytes = [](int log_size) { return std::uint64_t{1} << log_size; };
  const std::uint64_t sram = bytes(config_.log_uop_buff_size) + bytes(config_.log_inp_buff_size) +
                             bytes(config_.log_wgt_buff_size) + bytes(config_.log_acc_buff_size);
  if (sram > kMaxSramBytes)
    raise<ConfigError>(
        "simulator: the SRAMs of this configuration total {} bytes (LOG_UOP_BUFF_SIZE = {}: {} B, "
        "LOG_INP_BUFF_SIZE = {}: {} B, LOG_WGT_BUFF_SIZE = {}: {} B, LOG_ACC_BUFF_SIZE = {}: {} "
        "B), more than the simulator's limit of {} bytes (64 MiB); reduce the LOG_*_BUFF_SIZE "
        "values",
        sram, config_.log_uop_buff_size, bytes(config_.log_uop_buff_size),
        config_.log_inp_buff_size, bytes(config_.log_inp_buff_size), config_.log_wgt_buff_size,
        bytes(config_.log_wgt_buff_size), config_.log_acc_buff_size,
        bytes(config_.log_acc_buff_size), kMaxSramBytes);
  layout_ = config_.layout();
  batch_ = config_.batch();
  block_in_ = config_.block_in();
  block_out_ = config_.block_out();
  inp_.assign(std::size_t{config_.inp_depth()} * batch_ * block_in_, 0);
  wgt_.assign(std::size_t{config_.wgt_depth()} * block_out_ * block_in_ + kWgtSlack, 0);
  acc_.assign(std::size_t{config_.acc_depth()} * batch_ * block_out_, 0);
  uop_.assign(config_.uop_depth(), Uop{});
  if (config_.variant.store_reads_out_sram)
    out_writer_.assign(config_.acc_depth(), OutWriter::None);
  use_kernels(detail::simd_kernels());
}

DLAVM_INLINE void Simulator::use_kernels(const detail::SimdKernels* k) {
  if (wgt_behind_) catch_up_wgt();  // (from the shadows of the kernels in use until now)
  simd_ = k;
  shadow_ = k ? k->layout(tile()) : detail::ShadowLayout{};
  inp_shadow_.assign(config_.inp_depth() * shadow_.inp_bytes, std::byte{0});
  wgt_shadow_.assign(config_.wgt_depth() * shadow_.wgt_bytes, std::byte{0});
  inp_stale_ = true;
  // the weight shadow packed now, so that weight LOADs may write it alone (wgt_behind_)
  if (simd_ != nullptr)
    simd_->pack_wgt(wgt_.data(), wgt_shadow_.data(), config_.wgt_depth(), tile());
  wgt_stale_ = false;
}

DLAVM_INLINE void Simulator::set_kernels(SimKernels k) {
  use_kernels(k == SimKernels::Simd ? detail::simd_kernels() : nullptr);
}

DLAVM_INLINE std::vector<std::string> Simulator::simd_targets() {
  std::vector<std::string> out;
  for (const auto* k : detail::simd_kernel_sets()) out.emplace_back(k->target);
  return out;
}

DLAVM_INLINE void Simulator::set_simd_target(std::string_view target) {
  for (const auto* k : detail::simd_kernel_sets())
    if (target == k->target) {
      use_kernels(k);
      return;
    }
  std::string have;
  for (const auto& t : simd_targets()) have += (have.empty() ? "" : ", ") + t;
  raise<ValueError>("simulator: no SIMD kernels for '{}' in this build on this CPU; available: {}",
                    target, have.empty() ? std::string("none") : have);
}

DLAVM_INLINE void Simulator::pack_shadow(MemId m, std::size_t first, std::size_t count) {
  if (!simd_) return;  // stale already: the scalar loops do not read the shadows
  if (m == MemId::Inp && !inp_stale_) {
    simd_->pack_inp(inp_.data() + first * batch_ * block_in_,
                    inp_shadow_.data() + first * shadow_.inp_bytes, count, tile());
  } else if (m == MemId::Wgt && !wgt_stale_) {
    simd_->pack_wgt(wgt_.data() + first * block_out_ * block_in_,
                    wgt_shadow_.data() + first * shadow_.wgt_bytes, count, tile());
  }
}

DLAVM_INLINE detail::UopLoops Simulator::uop_loops(const InsnFields& f) const {
  detail::UopLoops l;
  l.iter_out = f.iter_out;
  l.iter_in = f.iter_in;
  l.dst_out = f.dst_factor_out;
  l.dst_in = f.dst_factor_in;
  l.src_out = f.src_factor_out;
  l.src_in = f.src_factor_in;
  l.wgt_out = f.wgt_factor_out;
  l.wgt_in = f.wgt_factor_in;
  l.uops = uop_.data() + f.uop_bgn;
  l.uop_count = f.uop_end - f.uop_bgn;
  return l;
}

DLAVM_INLINE void Simulator::catch_up_wgt() {
  simd_->unpack_wgt(wgt_shadow_.data(), wgt_.data(), config_.wgt_depth(), tile());
  wgt_behind_ = false;
}

DLAVM_INLINE void Simulator::refresh_shadows() {
  if (inp_stale_) simd_->pack_inp(inp_.data(), inp_shadow_.data(), config_.inp_depth(), tile());
  if (wgt_stale_) simd_->pack_wgt(wgt_.data(), wgt_shadow_.data(), config_.wgt_depth(), tile());
  inp_stale_ = wgt_stale_ = false;
}

DLAVM_INLINE std::uint64_t Dram::alloc(std::size_t bytes) {
  // Checked before rounding up to pages, which would wrap for sizes near 2^64.
  if (limit_ <= kBase || bytes > limit_ - kBase)
    raise<DeviceError>("DRAM allocation of {} bytes exceeds the 0x{:x}-byte address space", bytes,
                       limit_);
  const std::uint64_t size = (std::max<std::uint64_t>(bytes, 1) + kPage - 1) / kPage * kPage;
  std::uint64_t at = kBase;
  for (const auto& [start, a] : allocs_) {
    if (start >= at + size) break;
    const std::uint64_t used = std::max<std::uint64_t>(a.size, 1);
    at = std::max(at, (start + used + kPage - 1) / kPage * kPage);
  }
  if (at + size > limit_)
    raise<DeviceError>("DRAM exhausted: {} bytes requested, {} bytes in use of 0x{:x}", bytes,
                       in_use(), limit_);
  // (calloc, not a vector: the operating system's zero pages, touched only where a run does)
  std::unique_ptr<std::byte, Block::Free> host(
      static_cast<std::byte*>(std::calloc(std::max<std::size_t>(bytes, 1) + kHostSlack, 1)));
  if (!host)
    raise<DeviceError>("DRAM allocation of {} bytes: the host has no memory for its copy", bytes);
  allocs_[at] = Block{std::move(host), bytes};
  return at;
}

DLAVM_INLINE void Dram::free(std::uint64_t phys) {
  if (allocs_.erase(phys) == 0)
    raise<DeviceError>("DRAM free of 0x{:x}: no allocation starts there", phys);
}

DLAVM_INLINE std::span<std::byte> Dram::allocation(std::uint64_t phys) {
  const auto it = allocs_.find(phys);
  if (it == allocs_.end())
    raise<DeviceError>("DRAM address 0x{:x}: no allocation starts there", phys);
  return {it->second.bytes.get(), it->second.size};
}

DLAVM_INLINE std::byte* Dram::find(std::uint64_t phys, std::uint64_t bytes) {
  auto it = allocs_.upper_bound(phys);
  if (it == allocs_.begin()) return nullptr;
  --it;
  const std::uint64_t off = phys - it->first;
  if (off > it->second.size || bytes > it->second.size - off) return nullptr;
  return it->second.bytes.get() + off;
}

DLAVM_INLINE std::uint64_t Dram::in_use() const {
  std::uint64_t n = 0;
  for (const auto& [start, a] : allocs_) n += a.size;
  return n;
}

DLAVM_INLINE RunInfo Simulator::run(std::uint64_t insn_phys, std::uint32_t count) {
  const std::uint64_t bytes = std::uint64_t{count} * sizeof(InsnWord);
  const std::byte* p = dram_.find(insn_phys, bytes);
  if (!p && count != 0)
    raise<DeviceError>(
        "instruction stream at 0x{:x} ({} instructions) is outside any DRAM "
        "allocation",
        insn_phys, count);
  std::vector<InsnFields> prog;
  prog.reserve(count);
  for (std::uint32_t i = 0; i < count; ++i) {
    InsnWord w;
    for (int h = 0; h < 2; ++h) {
      std::uint64_t v = 0;
      for (int b = 0; b < 8; ++b)
        v |= std::uint64_t(std::to_integer<std::uint8_t>(p[i * 16 + h * 8 + b])) << (8 * b);
      w.word[h] = v;
    }
    prog.push_back(decode(layout_, w, i));
  }
  return run(prog);
}

DLAVM_INLINE RunInfo Simulator::run(std::span<const InsnFields> prog) {
  for (std::size_t i = 0; i < prog.size(); ++i) check_enums(prog[i], i);
  check_stream(config_, prog);
  RunInfo info;
  detail::dispatch(prog, [&](std::uint32_t i, std::uint64_t) -> std::uint64_t {
    execute(prog[i], i, info);
    ++info.instructions;
    return 0;
  });
  total_ += info.counters;
  return info;
}

[[noreturn]] DLAVM_INLINE void Simulator::fail_sram(const InsnFields& f, std::size_t i,
                                                    const char* what, std::uint64_t first,
                                                    std::uint64_t end, std::uint64_t depth) const {
  raise<DeviceError>("{} #{}: {} SRAM index range [{}, {}) exceeds the buffer depth {}",
                     insn_name(f), i, what, first, end, depth);
}

DLAVM_INLINE std::byte* Simulator::dram_rows(const InsnFields& f, std::size_t i,
                                             std::size_t elem_bytes) {
  if (f.y_size == 0) return nullptr;
  const std::uint64_t first = std::uint64_t{f.dram_base} * elem_bytes;
  const std::uint64_t last_end =
      (std::uint64_t{f.dram_base} + std::uint64_t{f.y_size - 1} * f.x_stride + f.x_size) *
      elem_bytes;
  std::byte* p = dram_.find(first, last_end - first);
  if (!p)
    raise<DeviceError>("{} #{} ({}): DRAM bytes [0x{:x}, 0x{:x}) are outside any allocation",
                       insn_name(f), i, runtime::mem_name(f.memory_type), first, last_end);
  return p;
}

DLAVM_INLINE void Simulator::charge(const InsnFields& f, std::size_t i, RunInfo& info) const {
  std::uint64_t units = 0;
  const char* what = "";
  switch (f.opcode) {
    case Opcode::Load:
      if (f.x_size != 0)
        units = (std::uint64_t{f.y_pad_0} + f.y_size + f.y_pad_1) *
                (std::uint64_t{f.x_pad_0} + f.x_size + f.x_pad_1);
      what = "SRAM elements to move";
      break;
    case Opcode::Store:
      if (f.x_size != 0) units = std::uint64_t{f.y_size} * f.x_size;
      what = "SRAM elements to move";
      break;
    case Opcode::Gemm:
    case Opcode::Alu:
      if (f.uop_end > f.uop_bgn)
        units = std::uint64_t{f.iter_out} * f.iter_in * (f.uop_end - f.uop_bgn);
      what = "micro-op executions";
      break;
    case Opcode::Finish:
      break;
  }
  if (units > work_budget_ - std::min(info.work, work_budget_))
    raise<DeviceError>(
        "{} #{}: {} {} would exceed the simulator's work budget of {} units per run ({} used by "
        "the instructions before it); raise it with set_work_budget",
        insn_name(f), i, units, what, work_budget_, info.work);
  info.work += units;
}

DLAVM_INLINE void Simulator::execute(const InsnFields& f, std::size_t i, RunInfo& info) {
  charge(f, i, info);
  switch (f.opcode) {
    case Opcode::Load:
      load(f, i, info.counters);
      break;
    case Opcode::Store:
      store(f, i, info.counters);
      break;
    case Opcode::Gemm:
      gemm(f, i, info.counters);
      break;
    case Opcode::Alu:
      alu(f, i, info.counters);
      break;
    case Opcode::Finish:
      info.finished = true;
      break;
  }
}

DLAVM_INLINE void Simulator::load(const InsnFields& f, std::size_t i, Counters& counters) {
  if (f.x_size == 0) return;
  const MemId m = f.memory_type;
  if (m == MemId::Out) raise<DeviceError>("LOAD #{}: memory type OUT cannot be loaded", i);
  const std::uint64_t rows = std::uint64_t{f.y_pad_0} + f.y_size + f.y_pad_1;
  const std::uint64_t cols = std::uint64_t{f.x_pad_0} + f.x_size + f.x_pad_1;
  std::uint64_t depth = 0;
  const char* name = "";
  switch (m) {
    case MemId::Uop:
      depth = config_.uop_depth(), name = "micro-op";
      break;
    case MemId::Inp:
      depth = config_.inp_depth(), name = "input";
      break;
    case MemId::Wgt:
      depth = config_.wgt_depth(), name = "weight";
      break;
    default:
      depth = config_.acc_depth(), name = "accumulator";
      break;
  }
  if (f.sram_base + rows * cols > depth)
    fail_sram(f, i, name, f.sram_base, f.sram_base + rows * cols, depth);
  const std::size_t eb = config_.elem_bytes(m);
  const std::byte* src = dram_rows(f, i, eb);
  counters.count(config_, f);
  if (!out_writer_.empty() && (m == MemId::Acc || m == MemId::Acc8))
    std::fill_n(out_writer_.begin() + f.sram_base, rows * cols, OutWriter::Load);
  const auto copy = [eb](std::int8_t* dst, const std::byte* s, std::size_t n) {
    std::memcpy(dst, s, n * eb);
  };
  switch (m) {
    case MemId::Uop:
      detail::load_box(uop_.data(), 1, f, src, eb,
                       [&](Uop* dst, const std::byte* s, std::size_t n) {
                         for (std::size_t e = 0; e < n; ++e)
                           dst[e] = runtime::unpack_uop(layout_, detail::le32(s + 4 * e));
                       });
      break;
    case MemId::Inp:
      detail::load_box(inp_.data(), eb, f, src, eb, copy);
      pack_shadow(m, f.sram_base, rows * cols);
      break;
    case MemId::Wgt:
      if (simd_ != nullptr && !wgt_stale_) {
        // into the shadow alone (wgt_behind_); a padding element's shadow is zeros (the
        // packing's reads past the box stay in the allocation's Dram::kHostSlack)
        detail::load_box(wgt_shadow_.data(), shadow_.wgt_bytes, f, src, eb,
                         [&](std::byte* dst, const std::byte* s, std::size_t n) {
                           simd_->pack_wgt(reinterpret_cast<const std::int8_t*>(s), dst, n, tile());
                         });
        wgt_behind_ = true;
        break;
      }
      detail::load_box(wgt_.data(), eb, f, src, eb, copy);
      pack_shadow(m, f.sram_base, rows * cols);
      break;
    case MemId::Acc:
      detail::load_box(acc_.data(), eb / 4, f, src, eb,
                       [&](std::int32_t* dst, const std::byte* s, std::size_t n) {
                         for (std::size_t k = 0; k < n * eb / 4; ++k)
                           dst[k] = static_cast<std::int32_t>(detail::le32(s + 4 * k));
                       });
      break;
    case MemId::Acc8:
      detail::load_box(acc_.data(), eb, f, src, eb,
                       [&](std::int32_t* dst, const std::byte* s, std::size_t n) {
                         for (std::size_t k = 0; k < n * eb; ++k)
                           dst[k] = static_cast<std::int8_t>(std::to_integer<std::uint8_t>(s[k]));
                       });
      break;
    default:
      break;
  }
}

DLAVM_INLINE void Simulator::store(const InsnFields& f, std::size_t i, Counters& counters) {
  if (f.x_size == 0) return;  // a NOP, whatever its memory type (VTA's runtime uses UOP)
  if (f.memory_type != MemId::Out)
    raise<DeviceError>("STORE #{}: memory type {} cannot be stored; only OUT", i,
                       runtime::mem_name(f.memory_type));
  if (f.y_pad_0 || f.y_pad_1 || f.x_pad_0 || f.x_pad_1)
    raise<DeviceError>("STORE #{}: padding ({}, {}, {}, {}) is not allowed on stores", i, f.y_pad_0,
                       f.y_pad_1, f.x_pad_0, f.x_pad_1);
  const std::uint64_t n = std::uint64_t{f.y_size} * f.x_size;
  if (f.sram_base + n > config_.acc_depth())
    fail_sram(f, i, "accumulator", f.sram_base, f.sram_base + n, config_.acc_depth());
  if (!out_writer_.empty()) check_out_sram(f, i, n);
  const std::size_t eb = config_.out_elem_bytes();
  std::byte* dst = dram_rows(f, i, eb);
  counters.count(config_, f);
  const std::size_t lanes = std::size_t(batch_) * block_out_;
  const int out_bytes = config_.out_width() / 8;
  // A row of x_size accumulator elements is contiguous in SRAM and in DRAM; with x_stride =
  // x_size so is the whole box.
  const bool one_run = f.x_stride == f.x_size || f.y_size == 1;
  const std::uint64_t runs = one_run ? 1 : f.y_size;
  for (std::uint64_t y = 0; y < runs; ++y) {
    const std::int32_t* a = acc_.data() + (f.sram_base + y * f.x_size) * lanes;
    std::byte* d = dst + y * f.x_stride * eb;
    const std::size_t n = (one_run ? std::size_t{f.y_size} : 1) * f.x_size * lanes;
    if (simd_ && std::endian::native == std::endian::little && out_bytes < 4) {
      if (out_bytes == 1) {
        simd_->truncate8(a, reinterpret_cast<std::uint8_t*>(d), n);
      } else {
        simd_->truncate16(a, reinterpret_cast<std::uint16_t*>(d), n);
      }
    } else if (out_bytes == 1) {
      for (std::size_t k = 0; k < n; ++k) d[k] = static_cast<std::byte>(a[k] & 0xFF);
    } else {
      for (std::size_t k = 0; k < n; ++k) {
        const auto v = static_cast<std::uint32_t>(a[k]);
        for (int b = 0; b < out_bytes; ++b)
          d[k * out_bytes + b] = static_cast<std::byte>((v >> (8 * b)) & 0xFF);
      }
    }
  }
}

DLAVM_INLINE bool Simulator::check_loops(const InsnFields& f, std::size_t i, bool gemm) {
  if (f.uop_bgn > f.uop_end)
    raise<DeviceError>("{} #{}: uop_bgn {} is after uop_end {}", insn_name(f), i, f.uop_bgn,
                       f.uop_end);
  if (f.uop_end > config_.uop_depth())
    fail_sram(f, i, "micro-op", f.uop_bgn, f.uop_end, config_.uop_depth());
  if (f.uop_bgn == f.uop_end || f.iter_out == 0 || f.iter_in == 0) return false;
  std::uint64_t dst = 0, src = 0, wgt = 0;
  for (std::uint32_t u = f.uop_bgn; u < f.uop_end; ++u) {
    dst = std::max<std::uint64_t>(dst, uop_[u].dst);
    src = std::max<std::uint64_t>(src, uop_[u].src);
    wgt = std::max<std::uint64_t>(wgt, uop_[u].wgt);
  }
  const std::uint64_t o = f.iter_out - 1, n = f.iter_in - 1;
  dst += o * f.dst_factor_out + n * f.dst_factor_in;
  src += o * f.src_factor_out + n * f.src_factor_in;
  wgt += o * f.wgt_factor_out + n * f.wgt_factor_in;
  if (dst >= config_.acc_depth())
    fail_sram(f, i, "accumulator (dst)", 0, dst + 1, config_.acc_depth());
  const bool reads_src = gemm ? !f.reset_reg : !f.use_imm;
  const std::uint64_t src_depth = gemm ? config_.inp_depth() : config_.acc_depth();
  if (reads_src && src >= src_depth)
    fail_sram(f, i, gemm ? "input (src)" : "accumulator (src)", 0, src + 1, src_depth);
  if (gemm && !f.reset_reg && wgt >= config_.wgt_depth())
    fail_sram(f, i, "weight", 0, wgt + 1, config_.wgt_depth());
  return true;
}

DLAVM_INLINE void Simulator::mark_out_sram(const InsnFields& f, OutWriter writer) {
  for (std::uint32_t o = 0; o < f.iter_out; ++o)
    for (std::uint32_t n = 0; n < f.iter_in; ++n)
      for (std::uint32_t u = f.uop_bgn; u < f.uop_end; ++u)
        out_writer_[uop_[u].dst + o * f.dst_factor_out + n * f.dst_factor_in] = writer;
}

DLAVM_INLINE void Simulator::check_out_sram(const InsnFields& f, std::size_t i,
                                            std::uint64_t n) const {
  for (std::uint64_t e = f.sram_base; e < f.sram_base + n && e < out_writer_.size(); ++e) {
    if (out_writer_[e] == OutWriter::Compute) continue;
    raise<FeatureError>(
        "STORE #{} ({}): accumulator entry {} was last written by {}; the {} design stores its "
        "output SRAM, which only a GEMM (not a reset) or an ALU instruction writes, so the "
        "board would store stale bytes",
        i, disassemble(f), e,
        out_writer_[e] == OutWriter::Load    ? "a LOAD"
        : out_writer_[e] == OutWriter::Reset ? "a GEMM reset"
                                             : "nothing since the device started",
        config_.variant.name());
  }
}

DLAVM_INLINE void Simulator::gemm(const InsnFields& f, std::size_t i, Counters& counters) {
  if (!check_loops(f, i, true)) return;
  counters.count(config_, f);
  if (!out_writer_.empty()) mark_out_sram(f, f.reset_reg ? OutWriter::Reset : OutWriter::Compute);
  if (f.reset_reg && simd_) {
    detail::GemmCall call;
    call.loops = uop_loops(f);
    call.acc = acc_.data();
    call.shape = tile();
    return simd_->reset(call);
  }
  if (f.reset_reg) {
    const std::size_t lanes = std::size_t(batch_) * block_out_;
    for (std::uint32_t o = 0; o < f.iter_out; ++o)
      for (std::uint32_t n = 0; n < f.iter_in; ++n)
        for (std::uint32_t u = f.uop_bgn; u < f.uop_end; ++u) {
          std::int32_t* a =
              acc_.data() + (uop_[u].dst + o * f.dst_factor_out + n * f.dst_factor_in) * lanes;
          std::fill(a, a + lanes, 0);
        }
    return;
  }
  if (simd_) {
    refresh_shadows();
    detail::GemmCall call;
    call.loops = uop_loops(f);
    call.acc = acc_.data();
    call.inp = inp_shadow_.data();
    call.wgt = wgt_shadow_.data();
    call.inp_stride = shadow_.inp_bytes;
    call.wgt_stride = shadow_.wgt_bytes;
    call.shape = tile();
    simd_->gemm(call);
  } else if (batch_ == 1 && block_in_ == 16 && block_out_ == 16) {
    gemm_loops<1, 16, 16>(f);
  } else if (batch_ == 1 && block_in_ == 32 && block_out_ == 32) {
    gemm_loops<1, 32, 32>(f);
  } else if (batch_ == 1 && block_in_ == 8 && block_out_ == 8) {
    gemm_loops<1, 8, 8>(f);
  } else {
    gemm_loops<0, 0, 0>(f);
  }
}

DLAVM_INLINE void Simulator::alu(const InsnFields& f, std::size_t i, Counters& counters) {
  if (!check_loops(f, i, false)) return;
  counters.count(config_, f);
  if (!out_writer_.empty()) mark_out_sram(f, OutWriter::Compute);
  // Shifts as the design reads their amounts (vta/hw/variant.hpp), on the scalar loops; but an
  // immediate that the amount's low LOG_ACC_WIDTH bits hold as it is (read as the design reads
  // them, signed or unsigned) means what TVM's simulator makes of it: it stays on the kernels.
  const Variant& v = config_.variant;
  const int w = config_.log_acc_width;
  const std::int32_t low = (std::int32_t{1} << w) - 1;
  const bool signed_low = v.shr_amount == ShrAmount::SignedLow;
  const bool imm_as_is = f.use_imm && (signed_low ? f.imm >= -(low + 1) / 2 && f.imm <= low / 2
                                                  : f.imm >= 0 && f.imm <= low);
  const bool low_bits =
      f.alu_opcode == AluOp::Shr && v.shr_amount != ShrAmount::Signed && !imm_as_is;
  if (low_bits && signed_low)
    return alu_loops(f, [w, low](std::int32_t x, std::int32_t y) {
      const std::int32_t k = y & low;
      return detail::alu_shr(x, k >= (std::int32_t{1} << (w - 1)) ? k - (low + 1) : k);
    });
  if (low_bits)
    return alu_loops(f,
                     [low](std::int32_t x, std::int32_t y) { return detail::alu_shr(x, y & low); });
  if (f.alu_opcode == AluOp::Mul && v.alu_opcode4 == AluOpcode4::Shl)
    return alu_loops(
        f, [low](std::int32_t x, std::int32_t y) { return detail::alu_shr(x, -((-y) & low)); });
  // The kernels' vectors hold 4 lanes or more: Highway 1.0.3's variable shift of a one-lane
  // vector reads a 64-bit count, so narrower elements stay on the scalar loops.
  if (simd_ && std::size_t(batch_) * block_out_ >= 4) {
    detail::AluCall call;
    call.loops = uop_loops(f);
    call.acc = acc_.data();
    call.lanes = std::size_t(batch_) * block_out_;
    call.op = f.alu_opcode;
    call.use_imm = f.use_imm;
    call.imm = f.imm;
    return simd_->alu(call);
  }
  switch (f.alu_opcode) {
    case AluOp::Min:
      alu_loops(f, [](std::int32_t x, std::int32_t y) { return std::min(x, y); });
      break;
    case AluOp::Max:
      alu_loops(f, [](std::int32_t x, std::int32_t y) { return std::max(x, y); });
      break;
    case AluOp::Add:
      alu_loops(f, detail::wrap_add);
      break;
    case AluOp::Shr:
      alu_loops(f, detail::alu_shr);
      break;
    case AluOp::Mul:
      alu_loops(f, [](std::int32_t x, std::int32_t y) {
        return static_cast<std::int32_t>(static_cast<std::uint32_t>(x) *
                                         static_cast<std::uint32_t>(y));
      });
      break;
  }
}

}  // namespace dlavm::vta

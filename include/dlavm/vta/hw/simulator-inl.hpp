// Definitions for dlavm/vta/hw/simulator.hpp (see core/api.hpp).
#pragma once

#include <dlavm/vta/hw/dispatch.hpp>
#include <dlavm/vta/hw/simulator.hpp>

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

DLAVM_INLINE std::uint64_t Dram::alloc(std::size_t bytes) {
  // Checked before rounding up to pages, which would wrap for sizes near 2^64.
  if (limit_ <= kBase || bytes > limit_ - kBase)
    raise<DeviceError>("DRAM allocation of {} bytes exceeds the 0x{:x}-byte address space", bytes,
                       limit_);
  const std::uint64_t size = (std::max<std::uint64_t>(bytes, 1) + kPage - 1) / kPage * kPage;
  std::uint64_t at = kBase;
  for (const auto& [start, a] : allocs_) {
    if (start >= at + size) break;
    const std::uint64_t used = std::max<std::uint64_t>(a.size(), 1);
    at = std::max(at, (start + used + kPage - 1) / kPage * kPage);
  }
  if (at + size > limit_)
    raise<DeviceError>("DRAM exhausted: {} bytes requested, {} bytes in use of 0x{:x}", bytes,
                       in_use(), limit_);
  allocs_[at].assign(bytes, std::byte{0});
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
  return it->second;
}

DLAVM_INLINE std::byte* Dram::find(std::uint64_t phys, std::uint64_t bytes) {
  auto it = allocs_.upper_bound(phys);
  if (it == allocs_.begin()) return nullptr;
  --it;
  const std::uint64_t off = phys - it->first;
  if (off > it->second.size() || bytes > it->second.size() - off) return nullptr;
  return it->second.data() + off;
}

DLAVM_INLINE std::uint64_t Dram::in_use() const {
  std::uint64_t n = 0;
  for (const auto& [start, a] : allocs_) n += a.size();
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

DLAVM_INLINE void Simulator::execute(const InsnFields& f, std::size_t i, RunInfo& info) {
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
  // Destination element (row r, column c of the padded tile) -> write `fill(dst, src)`.
  auto copy = [&](auto* sram, std::size_t lanes, auto&& convert) {
    using T = std::remove_reference_t<decltype(*sram)>;
    for (std::uint64_t r = 0; r < rows; ++r) {
      for (std::uint64_t c = 0; c < cols; ++c) {
        T* dst = sram + (f.sram_base + r * cols + c) * lanes;
        const bool data = r >= f.y_pad_0 && r < f.y_pad_0 + f.y_size && c >= f.x_pad_0 &&
                          c < f.x_pad_0 + f.x_size;
        if (!data) {
          std::fill(dst, dst + lanes, T{});
          continue;
        }
        const std::uint64_t y = r - f.y_pad_0, x = c - f.x_pad_0;
        convert(dst, src + (y * f.x_stride + x) * eb);
      }
    }
  };
  switch (m) {
    case MemId::Uop:
      copy(uop_.data(), 1, [&](Uop* dst, const std::byte* s) {
        std::uint32_t w = 0;
        for (int b = 0; b < 4; ++b)
          w |= std::uint32_t(std::to_integer<std::uint8_t>(s[b])) << (8 * b);
        *dst = runtime::unpack_uop(layout_, w);
      });
      break;
    case MemId::Inp:
      copy(inp_.data(), eb, [&](std::int8_t* dst, const std::byte* s) { std::memcpy(dst, s, eb); });
      break;
    case MemId::Wgt:
      copy(wgt_.data(), eb, [&](std::int8_t* dst, const std::byte* s) { std::memcpy(dst, s, eb); });
      break;
    case MemId::Acc:
      copy(acc_.data(), eb / 4, [&](std::int32_t* dst, const std::byte* s) {
        for (std::size_t k = 0; k < eb / 4; ++k) {
          std::uint32_t w = 0;
          for (int b = 0; b < 4; ++b)
            w |= std::uint32_t(std::to_integer<std::uint8_t>(s[4 * k + b])) << (8 * b);
          dst[k] = static_cast<std::int32_t>(w);
        }
      });
      break;
    case MemId::Acc8:
      copy(acc_.data(), eb, [&](std::int32_t* dst, const std::byte* s) {
        for (std::size_t k = 0; k < eb; ++k)
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
  const std::size_t eb = config_.out_elem_bytes();
  std::byte* dst = dram_rows(f, i, eb);
  counters.count(config_, f);
  const std::size_t lanes = std::size_t(batch_) * block_out_;
  const int out_bytes = config_.out_width() / 8;
  for (std::uint64_t y = 0; y < f.y_size; ++y) {
    for (std::uint64_t x = 0; x < f.x_size; ++x) {
      const std::int32_t* a = acc_.data() + (f.sram_base + y * f.x_size + x) * lanes;
      std::byte* d = dst + (y * f.x_stride + x) * eb;
      if (out_bytes == 1) {
        for (std::size_t k = 0; k < lanes; ++k) d[k] = static_cast<std::byte>(a[k] & 0xFF);
      } else {
        for (std::size_t k = 0; k < lanes; ++k) {
          const auto v = static_cast<std::uint32_t>(a[k]);
          for (int b = 0; b < out_bytes; ++b)
            d[k * out_bytes + b] = static_cast<std::byte>((v >> (8 * b)) & 0xFF);
        }
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

DLAVM_INLINE void Simulator::gemm(const InsnFields& f, std::size_t i, Counters& counters) {
  if (!check_loops(f, i, true)) return;
  counters.count(config_, f);
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
  if (batch_ == 1 && block_in_ == 16 && block_out_ == 16) {
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

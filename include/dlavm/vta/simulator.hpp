// Functional VTA simulator with exactly the semantics of VTA_ISA.md: DRAM as a set of
// allocations with physical addresses, the four SRAMs as typed arrays, the three modules and
// their token queues, and the reference counters. It reports, naming the instruction index:
// deadlock on dependency tokens, SRAM index out of range, DRAM access outside any allocation,
// unknown opcode or memory type.
//
// Supported element types: int8 inputs and weights, int32 accumulators, 8/16/32-bit outputs
// (VTA's default; other widths encode and decode but do not simulate).
#pragma once

#include <dlavm/core/error.hpp>
#include <dlavm/vta/config.hpp>
#include <dlavm/vta/counters.hpp>
#include <dlavm/vta/dispatch.hpp>
#include <dlavm/vta/isa.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <map>
#include <span>
#include <vector>

namespace dlavm::vta {

// Simulated DRAM: allocations at physical addresses in a 32-bit space (VTA's vta_phy_addr_t).
// Allocations are page aligned; address 0 and the first page are never handed out.
class Dram {
 public:
  static constexpr std::uint64_t kPage = 4096;
  static constexpr std::uint64_t kBase = 0x10000;

  explicit Dram(std::uint64_t limit = std::uint64_t{1} << 32) : limit_(limit) {}

  // First fit; raises DeviceError when the address space is exhausted.
  std::uint64_t alloc(std::size_t bytes) {
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
  void free(std::uint64_t phys) {
    if (allocs_.erase(phys) == 0)
      raise<DeviceError>("DRAM free of 0x{:x}: no allocation starts there", phys);
  }
  bool free_noexcept(std::uint64_t phys) noexcept { return allocs_.erase(phys) != 0; }
  // The host copy of the allocation that starts at `phys`.
  std::span<std::byte> allocation(std::uint64_t phys) {
    const auto it = allocs_.find(phys);
    if (it == allocs_.end())
      raise<DeviceError>("DRAM address 0x{:x}: no allocation starts there", phys);
    return it->second;
  }
  // [phys, phys + bytes) inside one allocation, or nullptr.
  std::byte* find(std::uint64_t phys, std::uint64_t bytes) {
    auto it = allocs_.upper_bound(phys);
    if (it == allocs_.begin()) return nullptr;
    --it;
    const std::uint64_t off = phys - it->first;
    if (off > it->second.size() || bytes > it->second.size() - off) return nullptr;
    return it->second.data() + off;
  }
  std::size_t allocation_count() const { return allocs_.size(); }
  std::uint64_t in_use() const {
    std::uint64_t n = 0;
    for (const auto& [start, a] : allocs_) n += a.size();
    return n;
  }

 private:
  std::uint64_t limit_;
  std::map<std::uint64_t, std::vector<std::byte>> allocs_;
};

struct RunInfo {
  Counters counters;      // of this run
  bool finished = false;  // a FINISH instruction executed
  std::size_t instructions = 0;
};

namespace detail {

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

}  // namespace detail

class Simulator {
 public:
  explicit Simulator(const Config& config) : config_(config) {
    config_.validate();
    if (config_.log_inp_width != 3 || config_.log_wgt_width != 3 || config_.log_acc_width != 5)
      raise<ConfigError>(
          "simulator: LOG_INP_WIDTH = {}, LOG_WGT_WIDTH = {}, LOG_ACC_WIDTH = {}; only int8 "
          "inputs and weights with int32 accumulators (3, 3, 5) are simulated",
          config_.log_inp_width, config_.log_wgt_width, config_.log_acc_width);
    if (config_.log_out_width < 3)
      raise<ConfigError>("simulator: LOG_OUT_WIDTH = {}; outputs of 8, 16 or 32 bits only",
                         config_.log_out_width);
    layout_ = config_.layout();
    batch_ = config_.batch();
    block_in_ = config_.block_in();
    block_out_ = config_.block_out();
    inp_.assign(std::size_t{config_.inp_depth()} * batch_ * block_in_, 0);
    wgt_.assign(std::size_t{config_.wgt_depth()} * block_out_ * block_in_, 0);
    acc_.assign(std::size_t{config_.acc_depth()} * batch_ * block_out_, 0);
    uop_.assign(config_.uop_depth(), Uop{});
  }

  const Config& config() const { return config_; }
  const IsaLayout& layout() const { return layout_; }
  Dram& dram() { return dram_; }
  // Totals over every run since construction or reset_counters().
  const Counters& counters() const { return total_; }
  void reset_counters() { total_ = {}; }

  // SRAM contents, element-major: inp [depth][BATCH][BLOCK_IN], wgt [depth][BLOCK_OUT]
  // [BLOCK_IN], acc [depth][BATCH][BLOCK_OUT], uop [depth].
  std::span<std::int8_t> inp_sram() { return inp_; }
  std::span<std::int8_t> wgt_sram() { return wgt_; }
  std::span<std::int32_t> acc_sram() { return acc_; }
  std::span<const Uop> uop_sram() const { return uop_; }

  // Runs `count` instructions read from DRAM at physical address `insn_phys`, as
  // VTADeviceRun does.
  RunInfo run(std::uint64_t insn_phys, std::uint32_t count) {
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

  // Runs decoded instructions (micro-ops still come from DRAM through LOAD UOP).
  RunInfo run(std::span<const InsnFields> prog) {
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

 private:
  [[noreturn]] void fail_sram(const InsnFields& f, std::size_t i, const char* what,
                              std::uint64_t first, std::uint64_t end, std::uint64_t depth) const {
    raise<DeviceError>("{} #{}: {} SRAM index range [{}, {}) exceeds the buffer depth {}",
                       insn_name(f), i, what, first, end, depth);
  }

  std::byte* dram_rows(const InsnFields& f, std::size_t i, std::size_t elem_bytes) {
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

  void execute(const InsnFields& f, std::size_t i, RunInfo& info) {
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

  void load(const InsnFields& f, std::size_t i, Counters& counters) {
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
        copy(inp_.data(), eb,
             [&](std::int8_t* dst, const std::byte* s) { std::memcpy(dst, s, eb); });
        break;
      case MemId::Wgt:
        copy(wgt_.data(), eb,
             [&](std::int8_t* dst, const std::byte* s) { std::memcpy(dst, s, eb); });
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

  void store(const InsnFields& f, std::size_t i, Counters& counters) {
    if (f.x_size == 0) return;  // a NOP, whatever its memory type (VTA's runtime uses UOP)
    if (f.memory_type != MemId::Out)
      raise<DeviceError>("STORE #{}: memory type {} cannot be stored; only OUT", i,
                         runtime::mem_name(f.memory_type));
    if (f.y_pad_0 || f.y_pad_1 || f.x_pad_0 || f.x_pad_1)
      raise<DeviceError>("STORE #{}: padding ({}, {}, {}, {}) is not allowed on stores", i,
                         f.y_pad_0, f.y_pad_1, f.x_pad_0, f.x_pad_1);
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

  // Checks uop range and the largest index every micro-op loop reaches; returns false for an
  // empty loop nest.
  bool check_loops(const InsnFields& f, std::size_t i, bool gemm) {
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

  template <int B, int BI, int BO>
  void gemm_loops(const InsnFields& f) {
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

  void gemm(const InsnFields& f, std::size_t i, Counters& counters) {
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

  template <class Op>
  void alu_loops(const InsnFields& f, Op op) {
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

  void alu(const InsnFields& f, std::size_t i, Counters& counters) {
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

  Config config_;
  IsaLayout layout_;
  int batch_ = 1, block_in_ = 16, block_out_ = 16;
  Dram dram_;
  std::vector<std::int8_t> inp_, wgt_;
  std::vector<std::int32_t> acc_;
  std::vector<Uop> uop_;
  Counters total_;
};

}  // namespace dlavm::vta

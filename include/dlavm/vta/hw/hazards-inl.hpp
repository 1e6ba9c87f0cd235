// Definitions for dlavm/vta/hw/hazards.hpp (see core/api.hpp).
#pragma once

#include <dlavm/vta/hw/dispatch.hpp>
#include <dlavm/vta/hw/hazards.hpp>

#include <algorithm>

namespace dlavm::vta {

namespace detail {

// check_hazards in two passes over the decoded stream: the vector clock each instruction
// completes with (what it knows of the other modules through the dependency tokens), then
// every SRAM access in stream order against the entry's last writer and readers.
class HazardChecker {
 public:
  using Clock = std::array<std::int64_t, 3>;

  // `prog` decoded, its LOAD UOPs reading `uops` from micro-op `uop_base` on (0 for a stream's
  // own words, its placement's first micro-op for relocated ones).
  HazardChecker(const Config& config, std::span<const InsnFields> prog,
                std::span<const std::uint32_t> uops, std::uint64_t uop_base)
      : config_(config), layout_(config.layout()), prog_(prog), uops_(uops), uop_base_(uop_base) {}

  void run() {
    // The vector clocks run the modules as the simulator dispatches them. A stream they leave
    // stuck deadlocks: it is reported as the simulator reports it, naming the stuck
    // instructions (below, every instruction ran).
    if (!vector_clocks()) {
      dispatch(prog_, [](std::uint32_t, std::uint64_t) { return std::uint64_t{0}; });
      raise<DeviceError>("deadlock on dependency tokens");  // (dispatch names it first)
    }
    for (std::size_t i = 0; i < prog_.size(); ++i) {
      accesses(i);
      check(i);
      record(i);
    }
  }

 private:
  // (from a byte per instruction: the check reads the module of each entry's last writer, an
  // instruction far back in the stream)
  std::size_t module(std::size_t i) const { return module_[i]; }

  // 1. Vector clocks: done_[i][m] = how many instructions of module m are known complete when
  //    instruction i completes (its own module counting i itself). Token queues carry the
  //    clock of the pushing instruction: l2c, c2l, c2s, s2c. False where a module is stuck.
  bool vector_clocks() {
    const std::size_t n = prog_.size();
    done_.assign(n, Clock{});
    seq_.assign(n, 0);
    module_.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      check_dep_flags(prog_[i], i);
      module_[i] = static_cast<std::uint8_t>(static_cast<int>(runtime::queue_of(prog_[i])) - 1);
    }
    std::array<std::vector<std::size_t>, 3> queue;
    for (std::size_t i = 0; i < n; ++i) {
      seq_[i] = static_cast<std::int64_t>(queue[module(i)].size()) + 1;
      queue[module(i)].push_back(i);
    }
    std::array<std::vector<Clock>, 4> tokens;
    std::array<std::size_t, 4> head{};
    std::array<std::size_t, 3> pos{};
    std::array<Clock, 3> last{};
    for (bool progress = true; progress;) {
      progress = false;
      for (std::size_t m = 0; m < 3; ++m)
        for (; pos[m] < queue[m].size(); ++pos[m], progress = true)
          if (!complete(queue[m][pos[m]], tokens, head, last[m])) break;
    }
    for (std::size_t m = 0; m < 3; ++m)
      if (pos[m] < queue[m].size()) return false;
    return true;
  }
  static std::size_t pop_queue(std::size_t m, bool prev) {
    return m == 0 ? 1 : m == 1 ? (prev ? 0 : 3) : 2;
  }
  static std::size_t push_queue(std::size_t m, bool prev) {
    return m == 0 ? 0 : m == 1 ? (prev ? 1 : 2) : 3;
  }
  // Instruction i completes if the tokens it pops are there: its clock joins theirs and its
  // module's last; false when it must wait.
  bool complete(std::size_t i, std::array<std::vector<Clock>, 4>& tokens,
                std::array<std::size_t, 4>& head, Clock& last) {
    const auto& f = prog_[i];
    const std::size_t m = module(i);
    const bool pp = f.pop_prev_dep && m > 0, pn = f.pop_next_dep && m < 2;
    if ((pp && head[pop_queue(m, true)] == tokens[pop_queue(m, true)].size()) ||
        (pn && head[pop_queue(m, false)] == tokens[pop_queue(m, false)].size()))
      return false;
    Clock c = last;
    for (const auto& [flag, prev] : {std::pair{pp, true}, std::pair{pn, false}}) {
      if (!flag) continue;
      const auto q = pop_queue(m, prev);
      const auto& t = tokens[q][head[q]++];
      for (std::size_t k = 0; k < 3; ++k) c[k] = std::max(c[k], t[k]);
    }
    c[m] = seq_[i];
    done_[i] = c;
    last = c;
    if (f.push_prev_dep && m > 0) tokens[push_queue(m, true)].push_back(c);
    if (f.push_next_dep && m < 2) tokens[push_queue(m, false)].push_back(c);
    return true;
  }

  // The clock instruction i starts with: its own module's predecessor and its pops.
  Clock started(std::size_t i) const {
    auto c = done_[i];
    c[module(i)] = seq_[i] - 1;
    return c;
  }

  // The entries [lo, hi) an operand (0 dst, 1 src, 2 wgt) of a GEMM or ALU kernel touches,
  // from the micro-ops loaded so far.
  std::pair<std::int64_t, std::int64_t> kernel_range(const InsnFields& f, int operand) const {
    std::int64_t lo = INT64_MAX, hi = INT64_MIN;
    const std::size_t end = std::min<std::size_t>(f.uop_end, uop_depth_);
    for (std::size_t u = f.uop_bgn; u < end && u < uop_sram_.size(); ++u) {
      const auto& op = uop_sram_[u];
      const std::int64_t v = operand == 0 ? op.dst : operand == 1 ? op.src : op.wgt;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    // entries past the last one a LOAD UOP reached hold zeros
    if (std::max<std::size_t>(f.uop_bgn, uop_sram_.size()) < end) {
      lo = std::min<std::int64_t>(lo, 0);
      hi = std::max<std::int64_t>(hi, 0);
    }
    if (lo > hi || f.iter_out == 0 || f.iter_in == 0) return {0, 0};
    const std::int64_t out = operand == 0   ? f.dst_factor_out
                             : operand == 1 ? f.src_factor_out
                                            : f.wgt_factor_out;
    const std::int64_t in = operand == 0   ? f.dst_factor_in
                            : operand == 1 ? f.src_factor_in
                                           : f.wgt_factor_in;
    hi += (std::int64_t{f.iter_out} - 1) * out + (std::int64_t{f.iter_in} - 1) * in;
    return {lo, hi + 1};
  }

  // 2. The accesses of instruction i (accesses_); a LOAD UOP also fills the micro-op SRAM.
  void add(const Access& a) { accesses_[naccesses_++] = a; }
  void accesses(std::size_t i) {
    const auto& f = prog_[i];
    naccesses_ = 0;
    switch (f.opcode) {
      case Opcode::Load:
        load_access(f);
        break;
      case Opcode::Store:
        add({2, f.sram_base, f.sram_base + std::int64_t{f.y_size} * f.x_size, false});
        break;
      case Opcode::Gemm:
      case Opcode::Alu: {
        add({3, f.uop_bgn, f.uop_end, false});
        const auto [d0, d1] = kernel_range(f, 0);
        const bool gemm = f.opcode == Opcode::Gemm;
        if (gemm && !f.reset_reg) {
          const auto [s0, s1] = kernel_range(f, 1);
          const auto [w0, w1] = kernel_range(f, 2);
          add({0, s0, s1, false});
          add({1, w0, w1, false});
        } else if (!gemm && !f.use_imm) {
          const auto [s0, s1] = kernel_range(f, 1);
          add({2, s0, s1, false});
        }
        add({2, d0, d1, true});
        break;
      }
      default:
        break;
    }
  }
  void load_access(const InsnFields& f) {
    if (f.x_size == 0) return;
    const std::int64_t box = (std::int64_t{f.y_pad_0} + f.y_size + f.y_pad_1) *
                             (std::int64_t{f.x_pad_0} + f.x_size + f.x_pad_1);
    const int m = f.memory_type == MemId::Inp   ? 0
                  : f.memory_type == MemId::Wgt ? 1
                  : f.memory_type == MemId::Uop ? 3
                                                : 2;
    add({m, f.sram_base, f.sram_base + box, true});
    if (m != 3) return;
    // DRAM micro-op d is uops_[d - uop_base_]; those outside the stream's are unknown. (The
    // SRAM's copy grows to the entries loaded: zeroing all of them for every stream took 28%
    // of checking a decode step's streams.)
    const std::size_t reach =
        std::min<std::size_t>(std::size_t{f.sram_base} + f.x_size, uop_depth_);
    if (reach > uop_sram_.size()) uop_sram_.resize(reach);
    for (std::uint64_t k = 0; k < f.x_size; ++k) {
      const std::uint64_t at = std::uint64_t{f.dram_base} + k;
      const auto dst = static_cast<std::size_t>(f.sram_base + k);
      if (at >= uop_base_ && at - uop_base_ < uops_.size() && dst < uop_sram_.size())
        uop_sram_[dst] = runtime::unpack_uop(layout_, uops_[at - uop_base_]);
    }
  }

  // Every access of instruction i against the state before it: a writer or (for a write) a
  // reader of another module that i's clock does not cover is a race.
  void check(std::size_t i) const {
    const std::size_t m = module(i);
    const Clock clock = started(i);
    for (const auto& a : std::span(accesses_.data(), naccesses_))
      mem_[static_cast<std::size_t>(a.memory)].each(
          a.begin, a.end, [&](std::int64_t e, const EntryRuns::State& en) {
            if (en.writer >= 0) {
              const auto w = static_cast<std::size_t>(en.writer);
              const auto wm = module(w);
              if (wm != m && clock[wm] < seq_[w]) race(i, a, en.writer, e, a.write ? "WAW" : "RAW");
            }
            if (a.write)
              for (std::size_t r = 0; r < 3; ++r) {
                if (r == m || en.reader[r] < 0) continue;
                const auto ri = static_cast<std::size_t>(en.reader[r]);
                if (clock[r] < seq_[ri]) race(i, a, en.reader[r], e, "WAR");
              }
          });
  }
  [[noreturn]] void race(std::size_t i, const Access& a, std::int64_t other, std::int64_t entry,
                         const char* kind) const {
    const auto& f = prog_[i];
    const auto& o = prog_[static_cast<std::size_t>(other)];
    raise<DeviceError>(
        "hazard: {} #{} ({} module) {} {} entry {} after {} #{} ({} module) {} it, with no "
        "dependency token ordering them ({} race)",
        insn_name(f), i, runtime::queue_name(runtime::queue_of(f)), a.write ? "writes" : "reads",
        hazard_mem_name(a.memory), entry, insn_name(o), other,
        runtime::queue_name(runtime::queue_of(o)),
        kind[0] == 'W' && kind[2] == 'R' ? "read" : "wrote", kind);
  }
  // Instruction i's accesses become the entries' last writer or a reader.
  void record(std::size_t i) {
    for (const auto& a : std::span(accesses_.data(), naccesses_)) {
      auto& runs = mem_[static_cast<std::size_t>(a.memory)];
      if (a.write)
        runs.write(a.begin, a.end, static_cast<std::int64_t>(i));
      else
        runs.read(a.begin, a.end, module(i), static_cast<std::int64_t>(i));
    }
  }

  const Config& config_;
  const IsaLayout layout_;
  std::span<const InsnFields> prog_;
  std::span<const std::uint32_t> uops_;
  std::uint64_t uop_base_;
  std::size_t uop_depth_ = config_.uop_depth();
  std::vector<Clock> done_;
  std::vector<std::int64_t> seq_;
  std::vector<std::uint8_t> module_;  // each instruction's module, 0 load to 2 store
  std::vector<runtime::Uop> uop_sram_;
  std::array<EntryRuns, 4> mem_{EntryRuns(config_.inp_depth()), EntryRuns(config_.wgt_depth()),
                                EntryRuns(config_.acc_depth()), EntryRuns(config_.uop_depth())};
  // instruction i's accesses (at most four: a GEMM's micro-ops, input, weights and
  // accumulator)
  std::array<Access, 4> accesses_{};
  std::size_t naccesses_ = 0;
};

}  // namespace detail

DLAVM_INLINE void check_hazards(const Config& config, const Stream& stream) {
  check_hazards(config, decode_all(config.layout(), stream.insns), stream.uops, 0);
}

DLAVM_INLINE void check_hazards(const Config& config, std::span<const InsnFields> prog,
                                std::span<const std::uint32_t> uops, std::uint64_t uop_base) {
  detail::HazardChecker(config, prog, uops, uop_base).run();
}

}  // namespace dlavm::vta

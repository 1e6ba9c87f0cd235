// Definitions for dlavm/vta/hw/hazards.hpp (see core/api.hpp).
#pragma once

#include <dlavm/vta/hw/dispatch.hpp>
#include <dlavm/vta/hw/hazards.hpp>

#include <algorithm>

namespace dlavm::vta {

DLAVM_INLINE void check_hazards(const Config& config, const Stream& stream) {
  const auto layout = config.layout();
  const std::size_t n = stream.insns.size();
  std::vector<InsnFields> prog;
  prog.reserve(n);
  for (std::size_t i = 0; i < n; ++i) prog.push_back(decode(layout, stream.insns[i], i));
  const auto module = [&](std::size_t i) {
    return static_cast<int>(runtime::queue_of(prog[i])) - 1;
  };
  // A stream that deadlocks is reported as the simulator reports it (naming the stuck
  // instructions); below, every instruction then runs.
  detail::dispatch(std::span<const InsnFields>(prog),
                   [](std::uint32_t, std::uint64_t) { return std::uint64_t{0}; });

  // 1. Vector clocks: done[i][m] = how many instructions of module m are known complete when
  //    instruction i completes (its own module counting i itself).
  std::vector<std::array<std::int64_t, 3>> done(n);
  std::vector<std::int64_t> seq(n);
  {
    std::array<std::vector<std::size_t>, 3> queue;
    for (std::size_t i = 0; i < n; ++i) {
      seq[i] = static_cast<std::int64_t>(queue[static_cast<std::size_t>(module(i))].size()) + 1;
      queue[static_cast<std::size_t>(module(i))].push_back(i);
    }
    // Token queues carry the clock of the pushing instruction: l2c, c2l, c2s, s2c.
    std::array<std::vector<std::array<std::int64_t, 3>>, 4> tokens;
    std::array<std::size_t, 4> head{};
    const auto pop_q = [](int m, bool prev) { return m == 0 ? 1 : m == 1 ? (prev ? 0 : 3) : 2; };
    const auto push_q = [](int m, bool prev) { return m == 0 ? 0 : m == 1 ? (prev ? 1 : 2) : 3; };
    std::array<std::size_t, 3> pos{};
    std::array<std::array<std::int64_t, 3>, 3> last{};
    bool progress = true;
    while (progress) {
      progress = false;
      for (int m = 0; m < 3; ++m) {
        auto& qm = queue[static_cast<std::size_t>(m)];
        while (pos[static_cast<std::size_t>(m)] < qm.size()) {
          const auto i = qm[pos[static_cast<std::size_t>(m)]];
          const auto& f = prog[i];
          const bool pp = f.pop_prev_dep && m > 0, pn = f.pop_next_dep && m < 2;
          if ((pp && head[pop_q(m, true)] == tokens[pop_q(m, true)].size()) ||
              (pn && head[pop_q(m, false)] == tokens[pop_q(m, false)].size()))
            break;
          auto c = last[static_cast<std::size_t>(m)];
          for (const auto& [flag, prev] : {std::pair{pp, true}, std::pair{pn, false}}) {
            if (!flag) continue;
            const auto q = pop_q(m, prev);
            const auto& t = tokens[q][head[q]++];
            for (int k = 0; k < 3; ++k) c[k] = std::max(c[k], t[k]);
          }
          c[m] = seq[i];
          done[i] = c;
          last[static_cast<std::size_t>(m)] = c;
          if (f.push_prev_dep && m > 0) tokens[push_q(m, true)].push_back(c);
          if (f.push_next_dep && m < 2) tokens[push_q(m, false)].push_back(c);
          ++pos[static_cast<std::size_t>(m)];
          progress = true;
        }
      }
    }
  }
  // The clock instruction i starts with: its own module's predecessor and its pops.
  const auto started = [&](std::size_t i) {
    auto c = done[i];
    c[static_cast<std::size_t>(module(i))] = seq[i] - 1;
    return c;
  };

  // 2. Accesses in stream order, checked against the last writer and readers of each entry.
  std::vector<runtime::Uop> uop_sram(config.uop_depth());
  std::array<detail::EntryRuns, 4> mem{
      detail::EntryRuns(config.inp_depth()), detail::EntryRuns(config.wgt_depth()),
      detail::EntryRuns(config.acc_depth()), detail::EntryRuns(config.uop_depth())};
  std::vector<detail::Access> acc;
  const auto kernel_range = [&](const InsnFields& f, int operand) {
    std::int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (std::uint32_t u = f.uop_bgn; u < f.uop_end && u < uop_sram.size(); ++u) {
      const auto& op = uop_sram[u];
      const std::int64_t v = operand == 0 ? op.dst : operand == 1 ? op.src : op.wgt;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    if (lo > hi || f.iter_out == 0 || f.iter_in == 0)
      return std::pair<std::int64_t, std::int64_t>{0, 0};
    const std::int64_t out = operand == 0   ? f.dst_factor_out
                             : operand == 1 ? f.src_factor_out
                                            : f.wgt_factor_out;
    const std::int64_t in = operand == 0   ? f.dst_factor_in
                            : operand == 1 ? f.src_factor_in
                                           : f.wgt_factor_in;
    hi += (std::int64_t{f.iter_out} - 1) * out + (std::int64_t{f.iter_in} - 1) * in;
    return std::pair<std::int64_t, std::int64_t>{lo, hi + 1};
  };
  for (std::size_t i = 0; i < n; ++i) {
    const auto& f = prog[i];
    acc.clear();
    switch (f.opcode) {
      case Opcode::Load: {
        if (f.x_size == 0) break;
        const std::int64_t box = (std::int64_t{f.y_pad_0} + f.y_size + f.y_pad_1) *
                                 (std::int64_t{f.x_pad_0} + f.x_size + f.x_pad_1);
        const int m = f.memory_type == MemId::Inp   ? 0
                      : f.memory_type == MemId::Wgt ? 1
                      : f.memory_type == MemId::Uop ? 3
                                                    : 2;
        acc.push_back({m, f.sram_base, f.sram_base + box, true});
        if (m == 3)
          for (std::int64_t k = 0; k < f.x_size; ++k) {
            const auto src = static_cast<std::size_t>(f.dram_base) + static_cast<std::size_t>(k);
            const auto dst = static_cast<std::size_t>(f.sram_base) + static_cast<std::size_t>(k);
            if (src < stream.uops.size() && dst < uop_sram.size())
              uop_sram[dst] = runtime::unpack_uop(layout, stream.uops[src]);
          }
        break;
      }
      case Opcode::Store:
        acc.push_back({2, f.sram_base, f.sram_base + std::int64_t{f.y_size} * f.x_size, false});
        break;
      case Opcode::Gemm:
      case Opcode::Alu: {
        acc.push_back({3, f.uop_bgn, f.uop_end, false});
        const auto [d0, d1] = kernel_range(f, 0);
        const bool gemm = f.opcode == Opcode::Gemm;
        if (gemm && !f.reset_reg) {
          const auto [s0, s1] = kernel_range(f, 1);
          const auto [w0, w1] = kernel_range(f, 2);
          acc.push_back({0, s0, s1, false});
          acc.push_back({1, w0, w1, false});
        } else if (!gemm && !f.use_imm) {
          const auto [s0, s1] = kernel_range(f, 1);
          acc.push_back({2, s0, s1, false});
        }
        acc.push_back({2, d0, d1, true});
        break;
      }
      default:
        break;
    }
    const auto m = static_cast<std::size_t>(module(i));
    const auto clock = started(i);
    const auto race = [&](const detail::Access& a, std::int64_t other, std::int64_t entry,
                          const char* kind) {
      raise<DeviceError>(
          "hazard: {} #{} ({} module) {} {} entry {} after {} #{} ({} module) {} it, with no "
          "dependency token ordering them ({} race)",
          insn_name(f), i, runtime::queue_name(runtime::queue_of(f)), a.write ? "writes" : "reads",
          detail::hazard_mem_name(a.memory), entry,
          insn_name(prog[static_cast<std::size_t>(other)]), other,
          runtime::queue_name(runtime::queue_of(prog[static_cast<std::size_t>(other)])),
          kind[0] == 'W' && kind[2] == 'R' ? "read" : "wrote", kind);
    };
    // Every access is checked against the state before this instruction, then recorded.
    for (const auto& a : acc)
      mem[static_cast<std::size_t>(a.memory)].each(
          a.begin, a.end, [&](std::int64_t e, const detail::EntryRuns::State& en) {
            if (en.writer >= 0) {
              const auto w = static_cast<std::size_t>(en.writer);
              const auto wm = static_cast<std::size_t>(module(w));
              if (wm != m && clock[wm] < seq[w]) race(a, en.writer, e, a.write ? "WAW" : "RAW");
            }
            if (a.write)
              for (std::size_t r = 0; r < 3; ++r) {
                if (r == m || en.reader[r] < 0) continue;
                const auto ri = static_cast<std::size_t>(en.reader[r]);
                if (clock[r] < seq[ri]) race(a, en.reader[r], e, "WAR");
              }
          });
    for (const auto& a : acc) {
      auto& runs = mem[static_cast<std::size_t>(a.memory)];
      if (a.write) {
        runs.write(a.begin, a.end, static_cast<std::int64_t>(i));
      } else {
        runs.read(a.begin, a.end, m, static_cast<std::int64_t>(i));
      }
    }
  }
}

}  // namespace dlavm::vta

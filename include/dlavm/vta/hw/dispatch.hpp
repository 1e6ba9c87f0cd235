// The three modules and the four token queues between them, shared by the functional
// simulator and the cycle model. Instructions are dispatched in order to their module;
// `dispatch` calls back every instruction in an order that each module's program order and
// the dependency tokens allow, and reports a deadlock naming the stuck instructions.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/vta/hw/isa.hpp>

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace dlavm::vta::detail {

struct TokenQueue {
  std::vector<std::uint64_t> time;  // when each token was pushed
  std::size_t head = 0;
  bool empty() const { return head == time.size(); }
  std::uint64_t pop() { return time[head++]; }
  void push(std::uint64_t t) { time.push_back(t); }
};

// Raises DeviceError for dependency flags a module cannot have (load has no previous module,
// store no next one).
void check_dep_flags(const InsnFields& f, std::size_t i);

// exec(index, ready) runs instruction `index`, whose popped tokens were pushed at time `ready`
// (the latest of them, 0 if none), and returns the time at which its own pushes happen.
template <class Exec>
void dispatch(std::span<const InsnFields> prog, Exec&& exec) {
  std::array<std::vector<std::uint32_t>, 3> queue;
  for (std::size_t i = 0; i < prog.size(); ++i) {
    check_dep_flags(prog[i], i);
    queue[static_cast<std::size_t>(runtime::queue_of(prog[i])) - 1].push_back(
        static_cast<std::uint32_t>(i));
  }
  TokenQueue l2c, c2l, c2s, s2c;
  // The queue module m pops from for its prev / next neighbour, and pushes to.
  auto pop_queue = [&](std::size_t m, bool prev) -> TokenQueue* {
    if (m == 0) return prev ? nullptr : &c2l;
    if (m == 1) return prev ? &l2c : &s2c;
    return prev ? &c2s : nullptr;
  };
  auto push_queue = [&](std::size_t m, bool prev) -> TokenQueue* {
    if (m == 0) return prev ? nullptr : &l2c;
    if (m == 1) return prev ? &c2l : &c2s;
    return prev ? &s2c : nullptr;
  };
  std::array<std::size_t, 3> pos{};
  bool progress = true;
  while (progress) {
    progress = false;
    for (std::size_t m = 0; m < 3; ++m) {
      while (pos[m] < queue[m].size()) {
        const auto i = queue[m][pos[m]];
        const auto& f = prog[i];
        TokenQueue* pp = f.pop_prev_dep ? pop_queue(m, true) : nullptr;
        TokenQueue* pn = f.pop_next_dep ? pop_queue(m, false) : nullptr;
        if ((pp && pp->empty()) || (pn && pn->empty())) break;
        std::uint64_t ready = 0;
        if (pp) ready = std::max(ready, pp->pop());
        if (pn) ready = std::max(ready, pn->pop());
        const std::uint64_t done = exec(i, ready);
        if (f.push_prev_dep) push_queue(m, true)->push(done);
        if (f.push_next_dep) push_queue(m, false)->push(done);
        ++pos[m];
        progress = true;
      }
    }
  }
  std::string stuck;
  for (std::size_t m = 0; m < 3; ++m) {
    if (pos[m] == queue[m].size()) continue;
    const auto i = queue[m][pos[m]];
    const auto& f = prog[i];
    const auto q = static_cast<Queue>(m + 1);
    std::string waits;
    auto need = [&](bool flag, bool prev) {
      if (!flag || !pop_queue(m, prev)->empty()) return;
      const auto from = static_cast<Queue>(prev ? m : m + 2);
      waits +=
          fmt::format("{}a token from {}", waits.empty() ? "" : " and ", runtime::queue_name(from));
    };
    need(f.pop_prev_dep, true);
    need(f.pop_next_dep, false);
    stuck += fmt::format("{}{} module stuck at {} #{} waiting for {}", stuck.empty() ? "" : "; ",
                         runtime::queue_name(q), insn_name(f), i, waits);
  }
  if (!stuck.empty()) raise<DeviceError>("deadlock on dependency tokens: {}", stuck);
}

}  // namespace dlavm::vta::detail

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/vta/hw/dispatch-inl.hpp>
#endif

// Definitions for dlavm/vta/hw/hazards.hpp (see core/api.hpp).
#pragma once

#include <dlavm/vta/hw/dispatch.hpp>
#include <dlavm/vta/hw/hazards.hpp>

#include <algorithm>

namespace dlavm::vta {

namespace detail {

// The SRAM accesses of a decoded stream's instructions, taken in stream order: LOAD the padded
// box it writes, STORE the accumulator rows it reads, GEMM and ALU their micro-ops and the range
// those span with the loop factors, from the micro-ops the LOAD UOPs before them filled the
// micro-op SRAM with.
class StreamAccesses {
 public:
  // `stream`'s LOAD UOPs read its micro-ops from micro-op `uop_base` on (0 for a stream's own
  // words, its placement's first micro-op for relocated ones).
  StreamAccesses(const Config& config, const DecodedStream& stream)
      : layout_(config.layout()),
        prog_(stream.prog),
        uops_(stream.uops),
        uop_base_(stream.uop_base),
        uop_depth_(config.uop_depth()) {}

  // Whether instructions f and g make the same accesses where the micro-op SRAM holds the same
  // micro-ops: the fields of() reads are equal.
  static bool same_accesses(const InsnFields& f, const InsnFields& g) {
    return f.opcode == g.opcode && f.memory_type == g.memory_type && f.sram_base == g.sram_base &&
           f.y_size == g.y_size && f.x_size == g.x_size && f.y_pad_0 == g.y_pad_0 &&
           f.y_pad_1 == g.y_pad_1 && f.x_pad_0 == g.x_pad_0 && f.x_pad_1 == g.x_pad_1 &&
           f.reset_reg == g.reset_reg && f.uop_bgn == g.uop_bgn && f.uop_end == g.uop_end &&
           f.iter_out == g.iter_out && f.iter_in == g.iter_in &&
           f.dst_factor_out == g.dst_factor_out && f.dst_factor_in == g.dst_factor_in &&
           f.src_factor_out == g.src_factor_out && f.src_factor_in == g.src_factor_in &&
           f.wgt_factor_out == g.wgt_factor_out && f.wgt_factor_in == g.wgt_factor_in &&
           f.use_imm == g.use_imm &&
           (f.opcode != Opcode::Load || f.memory_type != MemId::Uop || f.dram_base == g.dram_base);
  }

  static bool loads_uops(const InsnFields& f) {
    return f.opcode == Opcode::Load && f.memory_type == MemId::Uop;
  }

  // Instruction i taken without its accesses: a LOAD UOP still fills the micro-op SRAM.
  void skip(std::size_t i) {
    if (loads_uops(prog_[i])) of(i);
  }

  // Instruction i's accesses (at most four: a GEMM's micro-ops, input, weights and
  // accumulator), for i = 0, 1, 2, ... in turn (a LOAD UOP fills the micro-op SRAM).
  std::span<const Access> of(std::size_t i) {
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
    return {accesses_.data(), naccesses_};
  }

 private:
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

  void add(const Access& a) { accesses_[naccesses_++] = a; }
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

  IsaLayout layout_;
  std::span<const InsnFields> prog_;
  std::span<const std::uint32_t> uops_;
  std::uint64_t uop_base_;
  std::size_t uop_depth_;
  std::vector<runtime::Uop> uop_sram_;
  std::array<Access, 4> accesses_{};
  std::size_t naccesses_ = 0;
};

// check_hazards in two passes over the decoded stream: the vector clock each instruction
// completes with (what it knows of the other modules through the dependency tokens), then
// every SRAM access in stream order against the entry's last writer and readers.
// check_hazards_like checks those of a stream like a proven one at the entries its accesses
// add to the proven one's alone: the state of an entry (its last writer and readers) depends
// on the accesses to it alone, so those entries' states, and any race reported, are the whole
// check's.
class HazardChecker {
 public:
  using Clock = std::array<std::int64_t, 3>;

  HazardChecker(const Config& config, const DecodedStream& stream)
      : config_(config), stream_(stream), prog_(stream.prog), accesses_(config, stream) {}

  // The stream's proof (HazardProof) kept into `proof` by the run that proves it.
  void prove_into(HazardProof* proof) { proof_ = proof; }

  // At most this many added entries are checked alone (the states of each): beyond, the
  // whole stream's runs of entries cost less.
  static constexpr std::size_t kMaxAddedEntries = 4096;
  static constexpr std::size_t kMaxAddedRanges = 64;

  void run() {
    clocks();
    check_all();
  }

  // run() given `proven`, a stream run() passed: where it has as many instructions, each of the
  // same module and dependency flags (same_tokens), at the entries the stream's accesses add
  // alone (at most kMaxAddedEntries in kMaxAddedRanges ranges); whether it did (else it checked
  // the whole stream).
  // `proven_proof` (where not null): what proven's check computed (check_hazards_proving), read
  // where the micro-ops, their base and every LOAD UOP are proven's: then neither the clocks
  // nor the accesses of the instructions equal to proven's are computed again.
  bool run_like(const DecodedStream& proven, const HazardProof* proven_proof = nullptr) {
    // (one pass: the instructions that differ from proven's, whose tokens must not)
    bool same = proven.prog.size() == prog_.size();
    bool loads_differ = false;  // a LOAD UOP differs: the micro-ops the others read may
    for (std::size_t i = 0; i < prog_.size() && same; ++i) {
      const auto &f = prog_[i], &g = proven.prog[i];
      if (f == g) continue;
      same = same_tokens(f, g);
      loads_differ = loads_differ || StreamAccesses::loads_uops(f) || StreamAccesses::loads_uops(g);
      differ_.push_back(static_cast<std::uint32_t>(i));
    }
    if (!same) {
      run();
      return false;
    }
    const bool same_uops =
        std::ranges::equal(stream_.uops, proven.uops) && stream_.uop_base == proven.uop_base;
    if (proven_proof != nullptr && proven_proof->first.size() == prog_.size() + 1 &&
        proven_proof->clocks != nullptr && same_uops && !loads_differ) {
      proven_proof_ = proven_proof;
      use_clocks(proven_proof_->clocks);  // (the same tokens: the same clocks)
    } else {
      clocks();
    }
    if (!add_entries(proven, same_uops)) {
      proven_proof_ = nullptr;  // (check_all takes every access anew)
      check_all();
      return false;
    }
    check_added();
    return true;
  }
  // Whether run_like checked the added entries given proven's proof.
  bool read_proof() const { return proven_proof_ != nullptr; }

 private:
  struct Range {
    std::int64_t begin, end;
    std::size_t slot = 0;  // (check_added) the state of entry `begin` in states_
  };
  struct Piece {
    Access access;
    std::size_t slot;  // the state of its first entry
  };

  // The entries each access adds to the proven stream's access of the same instruction in the
  // same place of its list (the same memory, both reads or both writes), into added_; an access
  // with no such counterpart adds all its entries. An instruction equal in the fields its
  // accesses read adds none while both micro-op SRAMs hold the same micro-ops (the same
  // micro-ops at the same base, loaded by equal LOAD UOPs so far). False where they are more
  // than kMaxAddedEntries or kMaxAddedRanges.
  bool add_entries(const DecodedStream& proven, bool same_uops) {
    StreamAccesses now(config_, stream_), before(config_, proven);
    std::size_t d = 0;  // the next of differ_
    for (std::size_t i = 0; i < prog_.size(); ++i) {
      const bool differs = d < differ_.size() && differ_[d] == i;
      d += differs ? 1 : 0;
      const auto &f = prog_[i], &g = proven.prog[i];
      const bool same = !differs || StreamAccesses::same_accesses(f, g);
      if (same && same_uops) {
        now.skip(i);
        if (proven_proof_ == nullptr) before.skip(i);
        continue;
      }
      if (!same && (StreamAccesses::loads_uops(f) || StreamAccesses::loads_uops(g)))
        same_uops = false;
      const auto a = now.of(i);
      if (proven_proof_ == nullptr) {
        add_accesses(a, before.of(i));
        continue;
      }
      // (check_added reads these, the proof the others)
      changed_.push_back(
          {static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(changed_accesses_.size())});
      changed_accesses_.insert(changed_accesses_.end(), a.begin(), a.end());
      add_accesses(a, proven_accesses(i));
    }
    changed_.push_back({static_cast<std::uint32_t>(prog_.size()),
                        static_cast<std::uint32_t>(changed_accesses_.size())});  // (the end)
    return assign_states();
  }

  // The entries accesses `a` add to `b`, an instruction's in the proven stream.
  void add_accesses(std::span<const Access> a, std::span<const Access> b) {
    for (std::size_t k = 0; k < a.size(); ++k) {
      const auto m = static_cast<std::size_t>(a[k].memory);
      // (inside the memory, as the runs hold it)
      const auto lo = std::max<std::int64_t>(a[k].begin, 0), hi = std::min(a[k].end, depth(m));
      if (k < b.size() && b[k].memory == a[k].memory && b[k].write == a[k].write) {
        // [lo, hi) minus [b.begin, b.end): up to two ranges
        add_range(added_[m], lo, std::min(hi, b[k].begin));
        add_range(added_[m], std::max(lo, b[k].end), hi);
      } else {
        add_range(added_[m], lo, hi);
      }
    }
  }

  // Each added range's first state; false where they are more than kMaxAddedEntries or
  // kMaxAddedRanges.
  bool assign_states() {
    // each range's first state (a stream like the one before adds few entries: one state each,
    // where an access's part of them costs its entries rather than a search and a split of runs)
    std::size_t ranges = 0;
    for (auto& added : added_) {
      merge(added);
      ranges += added.size();
      for (auto& r : added) {
        r.slot = states_.size();
        states_.resize(states_.size() + static_cast<std::size_t>(r.end - r.begin));
        if (states_.size() > kMaxAddedEntries) return false;
      }
    }
    return ranges <= kMaxAddedRanges;
  }

  // Every access at the added entries alone, in stream order, against their states.
  void check_added() {
    // (the proof kept: proven's accesses copied whole at the end, the changed ones replaced,
    // where each changed instruction makes as many as its counterpart; else one by one)
    copy_proven_ = proven_proof_ != nullptr && changed_counts_same();
    std::size_t next = 0;  // the next of changed_
    for (std::size_t i = 0; i < prog_.size(); ++i) {
      pieces_.clear();
      const auto accesses = accesses_at(i, next);
      if (!copy_proven_) keep(accesses);
      for (const auto& a : accesses) {
        // (a scan: a stream like the one before adds few ranges)
        for (const auto& r : added_[static_cast<std::size_t>(a.memory)]) {
          if (r.begin >= a.end) break;
          if (r.end <= a.begin) continue;
          const auto begin = std::max(a.begin, r.begin);
          pieces_.push_back({{a.memory, begin, std::min(a.end, r.end), a.write},
                             r.slot + static_cast<std::size_t>(begin - r.begin)});
        }
      }
      if (pieces_.empty()) continue;
      const std::size_t m = module(i);
      const Clock clock = started(i);
      for (const auto& p : pieces_)
        for (std::int64_t e = p.access.begin; e < p.access.end; ++e)
          check_entry(i, m, clock, p.access, e,
                      states_[p.slot + static_cast<std::size_t>(e - p.access.begin)]);
      for (const auto& p : pieces_)
        for (std::size_t k = p.slot;
             k < p.slot + static_cast<std::size_t>(p.access.end - p.access.begin); ++k) {
          if (p.access.write)
            states_[k] = {.writer = static_cast<std::int64_t>(i)};
          else
            states_[k].reader[m] = static_cast<std::int64_t>(i);
        }
    }
    finish_proof();
  }

  static void add_range(std::vector<Range>& v, std::int64_t begin, std::int64_t end) {
    if (begin < end) v.push_back({begin, end});
  }
  // Sorted, and overlapping or touching ranges joined.
  static void merge(std::vector<Range>& v) {
    std::sort(v.begin(), v.end(), [](const Range& a, const Range& b) { return a.begin < b.begin; });
    std::size_t kept = 0;
    for (std::size_t r = 0; r < v.size(); ++r) {
      if (kept > 0 && v[r].begin <= v[kept - 1].end)
        v[kept - 1].end = std::max(v[kept - 1].end, v[r].end);
      else
        v[kept++] = v[r];
    }
    v.resize(kept);
  }

  // Every access of every instruction, in stream order.
  void check_all() {
    for (std::size_t i = 0; i < prog_.size(); ++i) {
      const auto a = accesses_.of(i);
      keep(a);
      check(i, a);
      record(i, a);
    }
    finish_proof();
  }

  // Proven instruction i's accesses, from its proof.
  std::span<const Access> proven_accesses(std::size_t i) const {
    const auto& p = *proven_proof_;
    return {p.accesses.data() + p.first[i], p.first[i + 1] - p.first[i]};
  }
  // Instruction i's accesses for check_added: taken anew, or given proven's proof a changed
  // instruction's (`next`: the next of changed_) or proven's.
  std::span<const Access> accesses_at(std::size_t i, std::size_t& next) {
    if (proven_proof_ == nullptr) return accesses_.of(i);
    if (changed_[next].insn != i) return proven_accesses(i);
    const auto& c = changed_[next++];
    return {changed_accesses_.data() + c.first, changed_[next].first - c.first};
  }
  // Whether each changed instruction makes as many accesses as proven's (most often).
  bool changed_counts_same() const {
    const auto& p = *proven_proof_;
    for (std::size_t c = 0; c + 1 < changed_.size(); ++c)
      if (changed_[c + 1].first - changed_[c].first !=
          p.first[changed_[c].insn + 1] - p.first[changed_[c].insn])
        return false;
    return true;
  }
  // The next instruction's accesses, into the proof being kept (in stream order).
  void keep(std::span<const Access> a) {
    if (proof_ == nullptr) return;
    if (proof_->first.empty()) {
      proof_->first.reserve(prog_.size() + 1);
      proof_->first.push_back(0);
    }
    proof_->accesses.insert(proof_->accesses.end(), a.begin(), a.end());
    proof_->first.push_back(static_cast<std::uint32_t>(proof_->accesses.size()));
  }
  // The proof complete: the clocks too, and where check_added copies them, proven's accesses
  // with the changed ones replaced (an empty stream keeps its first offset alone).
  void finish_proof() {
    if (proof_ == nullptr) return;
    if (copy_proven_) {
      const auto& p = *proven_proof_;
      proof_->first = p.first;
      proof_->accesses = p.accesses;
      for (std::size_t c = 0; c + 1 < changed_.size(); ++c)
        std::copy(changed_accesses_.begin() + changed_[c].first,
                  changed_accesses_.begin() + changed_[c + 1].first,
                  proof_->accesses.begin() + p.first[changed_[c].insn]);
    }
    if (proof_->first.empty()) proof_->first.push_back(0);
    proof_->clocks = clocks_;
  }

  // The vector clocks run the modules as the simulator dispatches them. A stream they leave
  // stuck deadlocks: it is reported as the simulator reports it, naming the stuck instructions
  // (below, every instruction ran).
  void clocks() {
    if (!vector_clocks()) {
      dispatch(prog_, [](std::uint32_t, std::uint64_t) { return std::uint64_t{0}; });
      raise<DeviceError>("deadlock on dependency tokens");  // (dispatch names it first)
    }
  }

  std::int64_t depth(std::size_t memory) const { return mem_[memory].depth(); }

  // (from a byte per instruction: the check reads the module of each entry's last writer, an
  // instruction far back in the stream)
  std::size_t module(std::size_t i) const { return module_[i]; }

  // Clocks computed, or a proof's (shared).
  void use_clocks(std::shared_ptr<const HazardProof::Clocks> c) {
    clocks_ = std::move(c);
    done_ = clocks_->done.data();
    seq_ = clocks_->seq.data();
    module_ = clocks_->module.data();
  }

  // 1. Vector clocks: done_[i][m] = how many instructions of module m are known complete when
  //    instruction i completes (its own module counting i itself). Token queues carry the
  //    clock of the pushing instruction: l2c, c2l, c2s, s2c. False where a module is stuck.
  bool vector_clocks() {
    const std::size_t n = prog_.size();
    auto made = std::make_shared<HazardProof::Clocks>();
    made->done.resize(n);
    made->seq.resize(n);
    made->module.resize(n);
    use_clocks(made);  // (read as they are made)
    // each module's instructions and the tokens pushed to each queue, counted first
    std::array<std::int64_t, 3> count{};
    std::array<std::size_t, 4> pushes{};
    for (std::size_t i = 0; i < n; ++i) {
      const auto& f = prog_[i];
      const auto m = static_cast<std::size_t>(runtime::queue_of(f)) - 1;
      if ((m == 0 && (f.pop_prev_dep || f.push_prev_dep)) ||
          (m == 2 && (f.pop_next_dep || f.push_next_dep)))
        check_dep_flags(f, i);
      made->module[i] = static_cast<std::uint8_t>(m);
      made->seq[i] = ++count[m];
      if (f.push_prev_dep && m > 0) ++pushes[push_queue(m, true)];
      if (f.push_next_dep && m < 2) ++pushes[push_queue(m, false)];
    }
    std::array<std::vector<std::uint32_t>, 3> queue;
    for (std::size_t m = 0; m < 3; ++m) queue[m].reserve(static_cast<std::size_t>(count[m]));
    for (std::size_t i = 0; i < n; ++i) queue[module(i)].push_back(static_cast<std::uint32_t>(i));
    std::array<std::vector<Clock>, 4> tokens;
    for (std::size_t q = 0; q < 4; ++q) tokens[q].reserve(pushes[q]);
    std::array<std::size_t, 4> head{};
    std::array<std::size_t, 3> pos{};
    std::array<Clock, 3> last{};
    for (bool progress = true; progress;) {
      progress = false;
      for (std::size_t m = 0; m < 3; ++m)
        for (; pos[m] < queue[m].size(); ++pos[m], progress = true)
          if (!complete(queue[m][pos[m]], tokens, head, last[m], *made)) break;
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
                std::array<std::size_t, 4>& head, Clock& last, HazardProof::Clocks& made) {
    const auto& f = prog_[i];
    const std::size_t m = module(i);
    const bool pp = f.pop_prev_dep && m > 0, pn = f.pop_next_dep && m < 2;
    const std::size_t qp = pop_queue(m, true), qn = pop_queue(m, false);
    if ((pp && head[qp] == tokens[qp].size()) || (pn && head[qn] == tokens[qn].size()))
      return false;
    Clock c = last;
    const auto join = [&](std::size_t q) {
      const Clock& t = tokens[q][head[q]++];
      for (std::size_t k = 0; k < 3; ++k) c[k] = std::max(c[k], t[k]);
    };
    if (pp) join(qp);
    if (pn) join(qn);
    c[m] = seq_[i];
    made.done[i] = c;
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

  // Every access of instruction i against the state before it: a writer or (for a write) a
  // reader of another module that i's clock does not cover is a race.
  void check(std::size_t i, std::span<const Access> accesses) const {
    const std::size_t m = module(i);
    const Clock clock = started(i);
    for (const auto& a : accesses)
      mem_[static_cast<std::size_t>(a.memory)].each(
          a.begin, a.end,
          [&](std::int64_t e, const EntryRuns::State& en) { check_entry(i, m, clock, a, e, en); });
  }
  // Access `a` of instruction i (of module m, started at `clock`) at entry e, in state `en`.
  void check_entry(std::size_t i, std::size_t m, const Clock& clock, const Access& a,
                   std::int64_t e, const EntryRuns::State& en) const {
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
  void record(std::size_t i, std::span<const Access> accesses) {
    for (const auto& a : accesses) {
      auto& runs = mem_[static_cast<std::size_t>(a.memory)];
      if (a.write)
        runs.write(a.begin, a.end, static_cast<std::int64_t>(i));
      else
        runs.read(a.begin, a.end, module(i), static_cast<std::int64_t>(i));
    }
  }

  const Config& config_;
  DecodedStream stream_;
  std::span<const InsnFields> prog_;
  StreamAccesses accesses_;
  // the clocks (HazardProof::Clocks), computed or a proof's: each instruction's clock, place
  // among its module's and module (0 load to 2 store)
  std::shared_ptr<const HazardProof::Clocks> clocks_;
  const Clock* done_ = nullptr;
  const std::int64_t* seq_ = nullptr;
  const std::uint8_t* module_ = nullptr;
  const HazardProof* proven_proof_ = nullptr;  // run_like's, where given
  HazardProof* proof_ = nullptr;               // the proof being kept (prove_into)
  std::array<EntryRuns, 4> mem_{EntryRuns(config_.inp_depth()), EntryRuns(config_.wgt_depth()),
                                EntryRuns(config_.acc_depth()), EntryRuns(config_.uop_depth())};
  // run_like's: the entries added, by memory (sorted, apart), their states, and an
  // instruction's accesses there
  std::array<std::vector<Range>, 4> added_;
  std::vector<EntryRuns::State> states_;
  std::vector<Piece> pieces_;
  // with proven_proof_: the instructions whose accesses differ from proven's (add_entries), in
  // order, each with the first of its accesses in changed_accesses_
  struct Changed {
    std::uint32_t insn, first;
  };
  std::vector<Changed> changed_;  // (ended by one past the last instruction)
  std::vector<Access> changed_accesses_;
  bool copy_proven_ = false;           // the proof kept is proven's, the changed ones replaced
  std::vector<std::uint32_t> differ_;  // (run_like) the instructions not equal to proven's
};

}  // namespace detail

DLAVM_INLINE void check_hazards(const Config& config, const Stream& stream) {
  check_hazards(config, decode_all(config.layout(), stream.insns), stream.uops, 0);
}

DLAVM_INLINE void check_hazards(const Config& config, std::span<const InsnFields> prog,
                                std::span<const std::uint32_t> uops, std::uint64_t uop_base) {
  detail::HazardChecker(config, {prog, uops, uop_base}).run();
}

DLAVM_INLINE bool check_hazards_like(const Config& config, const DecodedStream& stream,
                                     const DecodedStream& proven) {
  return detail::HazardChecker(config, stream).run_like(proven);
}

DLAVM_INLINE detail::ProvingCheck detail::check_hazards_proving(const Config& config,
                                                                const DecodedStream& stream,
                                                                const DecodedStream* proven,
                                                                const HazardProof* proven_proof,
                                                                HazardProof* proof) {
  HazardChecker checker(config, stream);
  if (proof != nullptr) {
    *proof = {};
    checker.prove_into(proof);
  }
  if (proven == nullptr) {
    checker.run();
    return {};
  }
  const bool added_alone = checker.run_like(*proven, proven_proof);
  return {added_alone, checker.read_proof()};
}

}  // namespace dlavm::vta

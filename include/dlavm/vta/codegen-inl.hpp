// Definitions for dlavm/vta/codegen.hpp (see core/api.hpp).
#pragma once

#include <dlavm/ne/affine.hpp>
#include <dlavm/runtime/replay.hpp>
#include <dlavm/vta/codegen.hpp>
#include <dlavm/vta/loop_memo_scan.hpp>
#include <dlavm/vta/repeated_runs.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <limits>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

namespace dlavm::vta {

DLAVM_INLINE std::string cpp_expr(const ne::Expr& e,
                                  const std::function<std::string(const ne::VarNode&)>& name_of) {
  using ne::Kind;
  const auto sub = [&](const ne::Expr& x) { return cpp_expr(x, name_of); };
  switch (e.kind()) {
    case Kind::IntImm: {
      const auto v = e.as<ne::IntImmNode>()->value;
      // INT64_MIN has no literal; every other value is a literal of the right type
      if (v == std::numeric_limits<std::int64_t>::min()) return "(-9223372036854775807LL - 1)";
      // ne folds constant subexpressions, so no two literals meet in an int operation; a
      // literal past int's range is a long by itself
      return v < 0 ? fmt::format("({})", v) : fmt::format("{}", v);
    }
    case Kind::Var:
      return name_of(*e.as<ne::VarNode>());
    case Kind::Not:
      return fmt::format("std::int64_t(!{})", sub(e.as<ne::NotNode>()->a));
    case Kind::Select: {
      const auto* s = e.as<ne::SelectNode>();
      return fmt::format("({} != 0 ? {} : {})", sub(s->cond), sub(s->t), sub(s->f));
    }
    default:
      break;
  }
  const auto* b = e.as<ne::BinaryNode>();
  const auto a = sub(b->a), c = sub(b->b);
  const auto divisor = [&](const char* op) {
    const auto* k = b->b.as<ne::IntImmNode>();
    if (k == nullptr || k->value < 1)
      raise<ValueError>(
          "replay_source: `{}` {} by `{}`; generated code divides only by positive "
          "constants",
          e, op, b->b);
  };
  switch (e.kind()) {
    case Kind::Add:
      return fmt::format("({} + {})", a, c);
    case Kind::Sub:
      return fmt::format("({} - {})", a, c);
    case Kind::Mul:
      return fmt::format("({} * {})", a, c);
    case Kind::FloorDiv:
      divisor("divides");
      return fmt::format("dlavm::runtime::floor_div({}, {})", a, c);
    case Kind::FloorMod:
      divisor("takes a modulo");
      return fmt::format("dlavm::runtime::floor_mod({}, {})", a, c);
    case Kind::Min:
      return fmt::format("dlavm::runtime::min({}, {})", a, c);
    case Kind::Max:
      return fmt::format("dlavm::runtime::max({}, {})", a, c);
    case Kind::EQ:
      return fmt::format("std::int64_t({} == {})", a, c);
    case Kind::NE:
      return fmt::format("std::int64_t({} != {})", a, c);
    case Kind::LT:
      return fmt::format("std::int64_t({} < {})", a, c);
    case Kind::LE:
      return fmt::format("std::int64_t({} <= {})", a, c);
    case Kind::GT:
      return fmt::format("std::int64_t({} > {})", a, c);
    case Kind::GE:
      return fmt::format("std::int64_t({} >= {})", a, c);
    case Kind::And:
      return fmt::format("std::int64_t({} != 0 && {} != 0)", a, c);
    case Kind::Or:
      return fmt::format("std::int64_t({} != 0 || {} != 0)", a, c);
    default:
      raise<ValueError>("replay_source: unexpected expression `{}`", e);
  }
}

namespace detail {

// The loop a ReplayPrinter memoizes (LoopMemoScan) and its keys, as printed (at namespace
// scope: Clang before 16 finds a class nested in the printer, with member initializers, not
// default-constructible inside it).
struct MemoLoop {
  explicit MemoLoop(ne::Var v)
      : scan(std::move(v), static_cast<int>(runtime::kKernelMemoEntries)) {}
  LoopMemoScan scan;
  std::vector<std::string> keys;
};

// Prints the program's statements as C++, one Replay call per intrinsic, as the host's
// replay plan (vta/replay_plan-inl.hpp) evaluates them. The two are written independently:
// tests/deploy compares their words for every dim value of its programs.
class ReplayPrinter : public tir::StmtVisitor<ReplayPrinter> {
 public:
  ReplayPrinter(const Program& p, std::string_view function, std::span<const std::string> dims)
      : prog_(p), function_(function), dims_(dims) {}

  fmt::memory_buffer out;

  void visit_for(const tir::ForNode& n, const tir::Stmt&) {
    if (in_kernel_ || memo_ || steps_ || plain_ == &n || plain_inside_ ||
        !LoopMemoScan::candidate(n.extent))
      return loop(n, false);
    // The outermost loops outside kernels are memoized (LoopMemo) when the values their body
    // reads from their variable, DRAM offsets aside, can be computed at the top of an
    // iteration: printed first to learn which those are, then, if they cannot, printed again
    // as a plain loop whose inner loops may be memoized themselves.
    // Where an iteration holds more than LoopMemoScan::kMinTileCalls calls, the loop is tiled
    // instead (runtime::TileMemo): printed again, its inner loops memoized as in any loop where
    // an iteration holds more calls than a loop memo does, else plain, as in a memoized loop.
    const Printed before = printed();
    open_memo(n.var);
    loop(n, true);
    const bool ok = memo_->scan.ok;
    std::optional<TileDecl> tile;
    if (memo_->scan.tiled() && !tiling_)
      tile = TileDecl{memo_->keys, memo_->scan.tile_transfers(),
                      memo_->scan.tile_memoizes_inside() ? 0 : memo_->scan.memo_calls()};
    memo_.reset();
    if (ok && !tile) return;
    undo(before);
    plain_ = &n;
    loop(n, false, tile ? &*tile : nullptr);
  }
  // A run of statements that prints the same code several times in a row (the reciprocal's
  // quotient bits: twelve kernels a bit, in the same rows bit after bit) is printed once, in a
  // loop of as many iterations, in a shorter function (docs/deploy.md). Inside loops alone,
  // where each kernel site is memoized and one that prints the same kernel shares the first
  // one's memo: the loop's sites then make the calls the run's made (outside loops each site
  // collects its micro-ops, which may fail where a memo's write again would not). The loop is
  // memoized as any other (visit_for): its iterations after the first two are copied at once
  // (Replay::iterations_again). Not inside a memoized loop (whose scan the printing of runs()
  // would feed twice) nor a kernel.
  void visit_seq(const tir::SeqNode& n, const tir::Stmt& s) {
    if (in_kernel_ || memo_ || steps_ || loop_vars_.empty())
      return tir::StmtVisitor<ReplayPrinter>::visit_seq(n, s);
    std::size_t next = 0;
    for (const Run& run : runs(n.seq)) {
      for (; next < run.first; ++next) visit(n.seq[next]);
      const auto first = n.seq.begin() + static_cast<std::ptrdiff_t>(run.first);
      const auto count = static_cast<std::int64_t>(run.count);
      const tir::Stmt rolled = tir::make_for(
          ne::var("repeat", 0, count - 1), ne::Expr(0), ne::Expr(count), tir::ForKind::Serial,
          tir::make_seq(
              std::vector<tir::Stmt>(first, first + static_cast<std::ptrdiff_t>(run.length))));
      visit(rolled);
      next = run.first + (run.length * run.count);
    }
    for (; next < n.seq.size(); ++next) visit(n.seq[next]);
  }
  void visit_if(const tir::IfThenElseNode& n, const tir::Stmt&) {
    line("if ({} != 0) {{", index(n.cond));
    ++depth_;
    visit(n.then_case);
    --depth_;
    if (n.else_case.defined()) {
      line("}} else {{");
      ++depth_;
      visit(n.else_case);
      --depth_;
    }
    line("}}");
  }
  void visit_store(const tir::StoreNode& n, const tir::Stmt&) {
    raise<ScheduleError>("program '{}': a store to '{}' is left on the host", prog_.name(),
                         n.buffer.name());
  }
  void visit_attr(const tir::AttrNode& n, const tir::Stmt& s) {
    if (n.key != intrin::uop_kernel) return tir::StmtVisitor<ReplayPrinter>::visit_attr(n, s);
    const te::CallNode* call = kernel_call(n.body);
    // (no micro-op: the kernel writes nothing; and a kernel moves no data, listing steps)
    if (call == nullptr || steps_) return;
    const auto& c = *call;
    count_call();
    if (loop_vars_.empty()) {  // entered once per replay: nothing to memoize
      kernel(n, c);
      return;
    }
    // A kernel inside loops is memoized (KernelMemo) on the values of those loops its fields
    // read, computed before it: the body is printed first, to learn which those are.
    int site = kernels_;
    fmt::memory_buffer outside = std::move(out);
    out = fmt::memory_buffer();
    keys_.assign(loop_vars_.size(), false);
    hoisted_.clear();
    reads_body_loop_ = reads_innermost_ = false;
    ++depth_;
    kernel(n, c);
    --depth_;
    ++kernels_;
    fmt::memory_buffer body = std::move(out);
    out = std::move(outside);
    std::string keys;
    const auto key = [&](const std::string& k) { keys += (keys.empty() ? "" : ", ") + k; };
    for (std::size_t j = 0; j < hoisted_.size(); ++j) {
      line("const std::int64_t k{}_{} = {};", site, j, hoisted_[j]);
      key(fmt::format("k{}_{}", site, j));
    }
    std::size_t count = hoisted_.size();
    for (std::size_t k = 0; k < loop_vars_.size(); ++k)
      if (keys_[k]) {
        key(names_[loop_vars_[k].id()]);
        ++count;
      }
    // Sites that print the same kernel from the same keys write the same instruction for the
    // same key values (the regions an instruction accesses are its call's, not the memo's):
    // such a site shares the memo of the first one, and writes the kernel again where that
    // one wrote it for those values (a quotient bit's kernels, the same in every bit; a
    // chunk's exponential in the sum's pass and again in the probabilities'). Keys that are
    // loop variables print as their names, so only sites in the same loops share those.
    {
      std::string text(body.data(), kernel_call_at_);
      text += fmt::format("|{}|{}|{}|{}", kernel_shape_, count, reads_body_loop_, keys);
      const std::string own = fmt::format("k{}_", site);  // the site's own key names
      for (auto at = text.find(own); at != std::string::npos; at = text.find(own, at + 2))
        text.replace(at, own.size(), "k_");
      std::erase(text, ' ');  // (sites at other depths indent alike)
      // (not two sites with keys in the same loop, which one iteration may enter with
      // other values each: each would replace the entry the other finds, and a loop's
      // copies stop where an entry is replaced)
      const std::uint64_t innermost = loop_vars_.back().id();
      auto& [first, loops] =
          shared_sites_.try_emplace(std::move(text), SharedSite{site, {}}).first->second;
      const bool met = std::find(loops.begin(), loops.end(), innermost) != loops.end();
      if (count == 0 || !met) site = first;
      if (!met) loops.push_back(innermost);
    }
    // a kernel that a memoized loop's body enters with the values of a loop inside it keeps
    // as many entries as the host's replay plan, so that a copied iteration finds each of them;
    // one whose keys read the innermost loop around it, of kKernelMemoEntries iterations at
    // most, an entry per iteration, so that the loop entered again (in the next iteration of
    // a loop around it) finds each of them
    if (site == kernels_ - 1) {
      std::string entries;
      if (reads_body_loop_) {
        entries = ", dlavm::runtime::kKernelMemoEntries";
      } else if (const std::int64_t most = loop_counts_.back();
                 reads_innermost_ && loop_vars_.size() > 1 && most > 1 &&
                 most <= static_cast<std::int64_t>(runtime::kKernelMemoEntries)) {
        entries = fmt::format(", {}", most);
      }
      memos_ += fmt::format("  dlavm::runtime::KernelMemo<{}{}> k{}{{}};\n", count, entries, site);
    }
    keys_.clear();
    hoisted_.clear();
    line("if (k{}.hit({})) {{", site, keys);
    line("  if (!r.{}_again(k{}, {})) return false;", c.name == intrin::alu ? "alu" : "gemm", site,
         accesses(c));
    line("}} else {{");
    line("  k{}.enter(r{}{});", site, keys.empty() ? "" : ", ", keys);
    out.append(body.data(), body.data() + body.size());
    line("  k{}.leave(r.writer());", site);
    line("}}");
  }
  void visit_evaluate(const tir::EvaluateNode& n, const tir::Stmt&) {
    const auto* call = n.value.as<te::CallNode>();
    if (call == nullptr)
      raise<ScheduleError>("program '{}': `{}` is not a VTA intrinsic", prog_.name(), n.value);
    const auto& name = call->name;
    const auto& a = call->args;
    if (in_kernel_) {
      if (name == intrin::uop_loop_begin) {
        line("r.loop_begin({}, {}, {}, {});", value(a[0]), value(a[1]), value(a[2]), value(a[3]));
        loops_of_image_.push_back({constant(a[0]), constant(a[1]), constant(a[2]), constant(a[3])});
      } else if (name == intrin::uop_loop_end) {
      } else if (name == intrin::gemm) {
        line("r.push({}, {}, {});", offset(call->buffers[0], a[0]), offset(call->buffers[1], a[1]),
             offset(call->buffers[2], a[2]));
        ops_of_image_.push_back({constant_offset(call->buffers[0], a[0]),
                                 constant_offset(call->buffers[1], a[1]),
                                 constant_offset(call->buffers[2], a[2])});
      } else if (name == intrin::gemm_reset) {
        line("r.push({}, 0, 0);", offset(call->buffers[0], a[0]));
        ops_of_image_.push_back({constant_offset(call->buffers[0], a[0]), 0, 0});
      } else if (name == intrin::alu) {
        line("r.push({}, {}, 0);", offset(call->buffers[0], a[3]), offset(call->buffers[1], a[4]));
        ops_of_image_.push_back(
            {constant_offset(call->buffers[0], a[3]), constant_offset(call->buffers[1], a[4]), 0});
      } else {
        raise<ScheduleError>("program '{}': '{}' inside a micro-op kernel", prog_.name(), name);
      }
      return;
    }
    if (steps_ && (name == intrin::load || name == intrin::store)) {
      // (a block of padding rows alone reads the tensor's start: Replay::load)
      const std::string by = tile_step(a[2]);
      const auto* rows = a[3].as<te::IntImmNode>();
      if (name == intrin::store || (rows != nullptr && rows->value > 0))
        line("tm.step({});", by);
      else
        line("tm.step({} > 0 ? {} : 0);", value(a[3]), by);
      return;
    }
    if (name == intrin::load) {
      const auto dram = dram_offset(a[2]);
      line(
          "if (!r.load(dlavm::runtime::MemId({}), {}u, {}, {}, {}, {}, {}, {}, {}, {}, {}, {})) "
          "return false;",
          value(a[0]), region(call->buffers[0]), offset(call->buffers[0], a[1]),
          param(call->buffers[1]), dram, value(a[3]), value(a[4]), value(a[5]), value(a[6]),
          value(a[7]), value(a[8]), value(a[9]));
      count_call();
    } else if (name == intrin::store) {
      const auto dram = dram_offset(a[2]);
      line("if (!r.store({}u, {}, {}, {}, {}, {}, {})) return false;", region(call->buffers[0]),
           offset(call->buffers[0], a[1]), param(call->buffers[1]), dram, value(a[3]), value(a[4]),
           value(a[5]));
      count_call();
    } else {
      raise<ScheduleError>("program '{}': intrinsic '{}' outside a micro-op kernel", prog_.name(),
                           name);
    }
  }

  // The variables the code reads: `const std::int64_t dim = dims[k];` for each dim used;
  // then the kernel sites' memos.
  std::string prologue() const {
    std::string s;
    for (std::size_t k = 0; k < dims_.size(); ++k)
      if (used_[k])
        s += fmt::format("  const std::int64_t d{} = dims[{}];  // {}\n", k, k, dims_[k]);
    return s + memos_;
  }
  // The kernels encoded as images, at namespace scope before the function: their micro-ops'
  // words, then `{function}_kernels`, which the sites index.
  std::string images() const {
    if (images_.empty()) return {};
    std::string uops, kernels;
    std::size_t at = 0;
    for (const auto& k : images_) {
      for (const auto u : k.uops) uops += fmt::format("{:#x}u, ", u);
      kernels += fmt::format(
          "    {{{{{{{:#x}ULL, {:#x}ULL}}}}, dlavm::runtime::Opcode({}), {}, "
          "{}_kernel_uops + {}}},\n",
          k.word.word[0], k.word.word[1], static_cast<int>(k.opcode), k.uops.size(), function_, at);
      at += k.uops.size();
    }
    return fmt::format(
        "// The kernels whose loops and micro-ops are constants, encoded (runtime::KernelImage).\n"
        "inline constexpr std::uint32_t {}_kernel_uops[] = {{{}}};\n"
        "inline constexpr dlavm::runtime::KernelImage {}_kernels[] = {{\n{}}};\n",
        function_, uops, function_, kernels);
  }

 private:
  // The first site that printed a kernel from its keys, and the loops around the sites that
  // share its memo (each the innermost around its site).
  struct SharedSite {
    int first = 0;
    std::vector<std::uint64_t> loops;
  };
  // What printing kernels, transfers and loops changes, to print again from where it started (a
  // loop memoized, then plain; a sequence's statements printed to compare them): printed()
  // before, undo() after. (Not the memos of loops inside others, entry_memos_: undone, a
  // number is left unused.)
  struct Printed {
    std::size_t out;
    int kernels, loops;
    std::string memos;
    std::vector<bool> used;
    std::unordered_map<std::string, SharedSite> shared_sites;
    std::size_t images;
  };
  Printed printed() const {
    return {out.size(), kernels_, loops_, memos_, used_, shared_sites_, images_.size()};
  }
  void undo(const Printed& p) {
    out.resize(p.out);
    kernels_ = p.kernels;
    loops_ = p.loops;
    memos_ = p.memos;
    used_ = p.used;
    shared_sites_ = p.shared_sites;
    images_.resize(p.images);
  }

  // The runs of a sequence's statements that print the same code (vta::detail::repeated_runs):
  // each kernel and transfer printed, then the printing undone. Only neighbours' code is
  // compared, which the loops and branches between them, not printed, do not change (a
  // kernel site's name and image follow from its kernel). Those print names of their own
  // (a loop's variable), as a kernel with a loop of its own does, and are no part of a run.
  std::vector<Run> runs(const std::vector<tir::Stmt>& seq) {
    const auto printable = [](const tir::Stmt& st) {
      const auto* attr = st.as<tir::AttrNode>();
      return (attr != nullptr && attr->key == intrin::uop_kernel) ||
             st.as<tir::EvaluateNode>() != nullptr;
    };
    if (std::ranges::count_if(seq, printable) < 3) return {};  // (no run: nothing to print)
    const Printed before = printed();
    std::vector<std::string> code(seq.size());
    for (std::size_t k = 0; k < seq.size(); ++k) {
      if (!printable(seq[k])) continue;
      const std::size_t at = out.size();
      visit(seq[k]);
      code[k].assign(out.data() + at, out.size() - at);
    }
    undo(before);
    return repeated_runs(code);
  }

  // The scan of a memoized loop (or part) of variable `var`, the loops around it its `outer`.
  void open_memo(const ne::Var& var) {
    memo_.emplace(var);
    for (const auto& v : loop_vars_)
      if (v.id() != var.id()) memo_->scan.outer.push_back(v);
  }
  // A memoized loop's (or part's) memo: its sizes, and whether an entry of the loop may copy
  // an iteration of the entry before (LoopMemoScan's `entry`, `entry_steps`).
  struct MemoDecl {
    std::size_t keys = 0;
    std::int64_t calls = 0;
    bool entry = false, entry_steps = false;
  };
  MemoDecl memo_decl() const {
    return {memo_->keys.size(), memo_->scan.memo_calls(), memo_->scan.entry,
            memo_->scan.entry_steps};
  }

  // A tiled loop's memo (runtime::TileMemo): its keys, as printed, and room for transfers.
  struct TileDecl {
    std::vector<std::string> keys;
    std::int64_t transfers = 0;
    // an iteration's calls where a loop memo holds them (its inner loops then plain), else 0
    // (its inner loops memoized: LoopMemoScan::tile_memoizes_inside)
    std::int64_t calls = 0;
  };

  void loop(const tir::ForNode& n, bool memoized, const TileDecl* tile = nullptr) {
    const auto name = fmt::format("i{}", loops_++);
    // a memoized loop inside another is reached again: its memos may outlive each entry
    const bool nested = !loop_vars_.empty();
    const auto lo = index(n.min), extent = index(n.extent);
    names_[n.var.id()] = name;
    // a memoized loop's memo is declared with it (zeroed only where the loop is reached),
    // its sizes known once the body is printed; a tiled loop's, known before
    const std::size_t memo_at = out.size();
    if (memoized) line("{{");
    if (tile != nullptr) {
      line("{{");
      ++depth_;
      // (and, where its iterations' calls fit a loop memo, their count: without the time
      // shortcuts it is one)
      line("dlavm::runtime::TileMemo<{}, {}, {}, {}> tm{{}};", tile->keys.size(), tile->transfers,
           prog_.regions().size(), tile->calls);
    }
    line("for (std::int64_t {0} = {1}, {0}_end = {0} + {2}; {0} < {0}_end; ++{0}) {{", name, lo,
         extent);
    ++depth_;
    if (!in_kernel_) {
      loop_vars_.push_back(n.var);
      loop_counts_.push_back(LoopMemoScan::largest_count(n.extent));
      if (plain_inside_) tile_body_loops_.push_back(n.var.id());
    }
    const std::int64_t repeat = memo_ ? memo_->scan.repeat : 1;
    if (memo_ && !memoized) memo_->scan.open(n.var, n.extent, in_kernel_);
    const auto parts = memoized ? apart_parts(n.body) : std::vector<std::vector<tir::Stmt>>{};
    std::vector<MemoDecl> segment_memos;  // the parts' memos, where the body has parts
    std::string same_at;    // an affine memoized loop's: its keys as a function of its variable
    if (tile != nullptr) {  // the body, then the steps of the transfers it wrote
      tiling_ = true;
      plain_inside_ = tile->calls != 0;
      const auto body = printed_apart([&] { visit(n.body); });
      steps_ = true;
      tile_var_ = n.var;
      const auto steps = printed_apart([&] { visit(n.body); });
      steps_ = false;
      tiling_ = false;
      plain_inside_ = false;
      tile_body_loops_.clear();
      line("if (r.tile_begin(tm, tm.same({}), {} + 1 < {}_end, true)) {{",
           fmt::join(tile->keys, ", "), name, name);
      out.append(body.data(), body.data() + body.size());
      line("}}");
      line("if (tm.recording) {{");
      out.append(steps.data(), steps.data() + steps.size());
      line("}}");
      line("if (!r.tile_end(tm)) return false;");
    } else if (!memoized) {
      visit(n.body);
    } else if (!parts.empty()) {
      segment_memos = print_parts(parts, name);
    } else {  // the body first: its keys are known once it is printed
      const auto body = printed_apart([&] { visit(n.body); });
      enclose(body,
              fmt::format("r.iteration_begin(lm, lm.same({}), {} + 1 < {}_end, {})",
                          fmt::join(memo_->keys, ", "), name, name, memo_->scan.affine),
              "r.iteration_end(lm)");
      // after an iteration copied whole, those with its keys (runtime::Replay::iterations_again)
      if (memo_->scan.affine) {
        line("if (!r.iterations_again(lm, {0}, {0}_end, lm_same)) return false;", name);
        same_at =
            fmt::format("const auto lm_same = [&](std::int64_t{}) {{ return lm.equal({}); }};\n",
                        memo_->keys.empty() ? "" : " " + name, fmt::join(memo_->keys, ", "));
      }
    }
    if (memo_) memo_->scan.close(repeat);
    if (!in_kernel_) {
      loop_vars_.pop_back();
      loop_counts_.pop_back();
    }
    --depth_;
    line("}}");
    names_.erase(n.var.id());
    if (tile != nullptr) {
      --depth_;
      line("}}");
    }
    if (memoized) {
      fmt::memory_buffer memo;
      if (parts.empty()) segment_memos = {memo_decl()};
      std::string again;  // a loop around it has iterations left (a kept memo's entries)
      for (const auto& v : loop_vars_)
        again += fmt::format("{}{} + 1 < {}_end", again.empty() ? "" : " || ", names_[v.id()],
                             names_[v.id()]);
      const auto indent = [&] {
        for (int i = 0; i < depth_ + 1; ++i) fmt::format_to(std::back_inserter(memo), "  ");
      };
      for (std::size_t k = 0; k < segment_memos.size(); ++k) {
        const MemoDecl& d = segment_memos[k];
        indent();
        if (!nested || !d.entry) {  // zeroed where the loop is reached
          fmt::format_to(std::back_inserter(memo), "dlavm::runtime::LoopMemo<{}, {}, {}> {}{{}};\n",
                         d.keys, d.calls, prog_.regions().size(), memo_name(k));
          continue;
        }
        // declared with the kernels' memos, with room for the words of an iteration of as many
        // as its calls (one with a pop's no-op more is not kept: zeroed in every replay, the
        // room costs a decode step more than the no-ops would save), where the time shortcuts
        // keep it (runtime::KeptLoopMemo), else where the loop is reached
        const int kept = entry_memos_++;
        const auto sizes = fmt::format("{}, {}, {}", d.keys, d.calls, prog_.regions().size());
        memos_ += fmt::format("  dlavm::runtime::KeptLoopMemo<{}> lm{}{{}};\n", sizes, kept);
        fmt::format_to(std::back_inserter(memo), "dlavm::runtime::OwnLoopMemo<{}> own{}{{}};\n",
                       sizes, kept);
        indent();
        fmt::format_to(std::back_inserter(memo),
                       "auto& {} = dlavm::runtime::loop_memo(own{}, lm{});\n", memo_name(k), kept,
                       kept);
        indent();
        fmt::format_to(std::back_inserter(memo), "{}.enter({}, {});\n", memo_name(k), d.entry_steps,
                       again);
      }
      if (!same_at.empty()) {  // (declared before the loop, whose variable it takes)
        indent();
        memo.append(same_at.data(), same_at.data() + same_at.size());
      }
      // after the block's opening line
      const std::size_t at = memo_at + static_cast<std::size_t>(2 * depth_) + 2;
      std::string text(out.data() + at, out.size() - at);
      out.resize(at);
      out.append(memo.data(), memo.data() + memo.size());
      out.append(text.data(), text.data() + text.size());
      line("}}");
    }
  }
  // A transfer's DRAM step from a tile to the next: its offset's coefficient of the tiled
  // loop's variable (affine, with a step free of the loops inside: LoopMemoScan::tiled()).
  std::string tile_step(const te::Expr& offset) {
    const auto* i = offset.as<te::IndexNode>();
    if (i == nullptr) return "0";  // (a constant: value() raises where it is neither)
    const auto form = ne::linear_form(i->index, {*tile_var_});
    if (!form)
      raise<ScheduleError>("program '{}': a tiled loop's DRAM offset `{}` is not affine in {}",
                           prog_.name(), i->index, tile_var_->name());
    return index(form->strides[0]);
  }

  // The name of a memoized loop's k-th memo (one, or one per part of its body).
  static std::string memo_name(std::size_t k) {
    return k == 0 ? std::string("lm") : fmt::format("lm_{}", k);
  }
  // A memoized loop's body as parts (intrin::replay_apart): the statements of its sequence
  // (inside its allocations, which print nothing) between those marked apart, each marked one
  // a part of its own; none where no statement is marked.
  static std::vector<std::vector<tir::Stmt>> apart_parts(tir::Stmt body) {
    while (const auto* a = body.as<tir::AllocateNode>()) body = a->body;
    const auto* seq = body.as<tir::SeqNode>();
    if (seq == nullptr) return {};
    const auto marked = [](const tir::Stmt& st) {
      const auto* attr = st.as<tir::AttrNode>();
      return attr != nullptr && attr->key == intrin::replay_apart;
    };
    if (std::none_of(seq->seq.begin(), seq->seq.end(), marked)) return {};
    std::vector<std::vector<tir::Stmt>> parts(1);
    for (const auto& st : seq->seq) {
      if (marked(st)) {
        parts.push_back({st});
        parts.emplace_back();
      } else {
        parts.back().push_back(st);
      }
    }
    return parts;
  }
  // A memoized loop's body in parts: each part not marked apart memoized on its own (a
  // LoopMemo of its keys and calls, copied where it repeats), a marked one written call by
  // call. The memos (MemoDecl), in the order of their names (memo_name).
  std::vector<MemoDecl> print_parts(const std::vector<std::vector<tir::Stmt>>& parts,
                                    const std::string& loop) {
    std::vector<MemoDecl> memos;
    const ne::Var var = memo_->scan.var;
    for (const auto& part : parts) {
      if (part.empty()) continue;
      open_memo(var);  // each part's keys and calls apart
      const auto body = printed_apart([&] {
        for (const auto& st : part) visit(st);
      });
      const auto* attr = part.front().as<tir::AttrNode>();
      if ((attr != nullptr && attr->key == intrin::replay_apart) || !memo_->scan.ok) {
        // (one level less: printed for the block of a memoized part)
        for (std::size_t at = 0; at < body.size();) {
          std::size_t end = at;
          while (end < body.size() && body.data()[end] != '\n') ++end;
          const std::size_t from = std::min(at + 2, end);
          out.append(body.data() + from, body.data() + end);
          out.push_back('\n');
          at = end + 1;
        }
        continue;
      }
      const auto memo = memo_name(memos.size());
      enclose(body,
              fmt::format("r.iteration_begin({0}, {0}.same({1}), {2} + 1 < {2}_end, {3}, true)",
                          memo, fmt::join(memo_->keys, ", "), loop, memo_->scan.affine),
              fmt::format("r.iteration_end({})", memo));
      memos.push_back(memo_decl());
    }
    open_memo(var);  // the loop's: memoized (in parts)
    return memos;
  }

  // What `print` prints, one level deeper, in a buffer of its own: a loop's body or part, printed
  // before the lines around it, which name what printing it learns (its keys).
  template <class Print>
  fmt::memory_buffer printed_apart(Print print) {
    fmt::memory_buffer outside = std::move(out);
    out = fmt::memory_buffer();
    ++depth_;
    print();
    --depth_;
    fmt::memory_buffer body = std::move(out);
    out = std::move(outside);
    return body;
  }
  // `body` where the memo call `begin` returns true, then the memo call `end`.
  void enclose(const fmt::memory_buffer& body, const std::string& begin, const std::string& end) {
    line("if ({}) {{", begin);
    out.append(body.data(), body.data() + body.size());
    line("}}");
    line("if (!{}) return false;", end);
  }

  // A call that writes an instruction, in the loop being memoized.
  void count_call() {
    if (memo_) memo_->scan.call();
  }
  template <class... Args>
  void line(fmt::format_string<Args...> f, Args&&... args) {
    for (int i = 0; i < depth_; ++i) fmt::format_to(std::back_inserter(out), "  ");
    fmt::format_to(std::back_inserter(out), f, std::forward<Args>(args)...);
    out.push_back('\n');
  }

  std::string index(const ne::Expr& e) {
    std::vector<std::size_t> outer;  // the loops around the kernel being printed it reads
    bool inner = false;              // and whether it reads a loop inside that kernel
    std::string code = cpp_expr(e, [&](const ne::VarNode& v) -> std::string {
      if (const auto it = names_.find(v.id); it != names_.end()) {
        bool around = false;
        for (std::size_t k = 0; k < keys_.size(); ++k)
          if (loop_vars_[k].id() == v.id) {
            outer.push_back(k);
            around = true;
            reads_innermost_ = reads_innermost_ || k + 1 == loop_vars_.size();
            reads_body_loop_ = reads_body_loop_ || (memo_ && memo_->scan.opened_inside(v.id)) ||
                               std::find(tile_body_loops_.begin(), tile_body_loops_.end(), v.id) !=
                                   tile_body_loops_.end();
          }
        inner = inner || !around;
        return it->second;
      }
      for (std::size_t k = 0; k < dims_.size(); ++k)
        if (dims_[k] == v.name) {
          used_.resize(dims_.size());
          used_[k] = true;
          return fmt::format("d{}", k);
        }
      raise<ValueError>(
          "program '{}': reads the symbolic dim '{}', which the replay is not given "
          "(given: {})",
          prog_.name(), v.name, fmt::join(dims_, ", "));
    });
    // a value of the memoized loop's iteration is a key (LoopMemoScan)
    if (memo_ && !dram_ && memo_->scan.read(e, kernel_) &&
        std::find(memo_->keys.begin(), memo_->keys.end(), code) == memo_->keys.end())
      memo_->keys.push_back(code);
    if (outer.empty()) return code;
    if (inner) {  // varies inside the kernel: the loops it reads around it are its memo's keys
      for (const std::size_t k : outer) keys_[k] = true;
      return code;
    }
    // a value of the loops around the kernel alone: computed before it, a key of its memo
    const auto it = std::find(hoisted_.begin(), hoisted_.end(), code);
    const auto j = static_cast<std::size_t>(it - hoisted_.begin());
    if (it == hoisted_.end()) hoisted_.push_back(code);
    return fmt::format("k{}_{}", kernels_, j);
  }
  // A transfer's DRAM offset: a memoized loop's copy of an iteration recomputes it, so it is
  // no key.
  std::string dram_offset(const te::Expr& e) {
    if (memo_) memo_->scan.dram(e);
    dram_ = true;
    auto code = value(e);
    dram_ = false;
    return code;
  }
  std::string value(const te::Expr& e) {
    if (const auto* c = e.as<te::IntImmNode>()) return cpp_expr(ne::Expr(c->value), {});
    if (const auto* i = e.as<te::IndexNode>()) return index(i->index);
    raise<ScheduleError>("program '{}': intrinsic argument `{}` is not an index", prog_.name(), e);
  }
  // An SRAM buffer's base plus an offset.
  std::string offset(const te::Buffer& b, const te::Expr& e) {
    const auto it = prog_.sram().find(b.get());
    if (it == prog_.sram().end())
      raise<ScheduleError>("program '{}': buffer '{}' has no SRAM placement", prog_.name(),
                           b.name());
    if (const auto* c = e.as<te::IntImmNode>())
      return fmt::format("{}", it->second.base + c->value);
    return fmt::format("{} + {}", it->second.base, value(e));
  }
  // A kernel field's value where it is a constant; else 0, and the kernel is no image.
  std::int64_t constant(const te::Expr& e) {
    if (const auto* c = e.as<te::IntImmNode>()) return c->value;
    if (const auto* i = e.as<te::IndexNode>())
      if (const auto* c = i->index.as<ne::IntImmNode>()) return c->value;
    constant_ = false;
    return 0;
  }
  std::int64_t constant_offset(const te::Buffer& b, const te::Expr& e) {
    const auto it = prog_.sram().find(b.get());  // (offset() raised where there is none)
    return it->second.base + constant(e);
  }
  // The kernel just visited as the runtime's writer encodes it, and its index in images_ (an
  // equal image's): none where a field is no constant, its loops have no iteration, or the
  // writer fails (the site's calls report that when they run).
  std::optional<std::size_t> encode(const te::CallNode& c) {
    if (!constant_ || ops_of_image_.empty() || loops_of_image_.size() > 2) return std::nullopt;
    for (const auto& l : loops_of_image_)
      if (l.extent < 1) return std::nullopt;
    const bool alu = c.name == intrin::alu;
    const std::int64_t op = alu ? constant(c.args[0]) : 0, use_imm = alu ? constant(c.args[1]) : 0,
                       imm = alu ? constant(c.args[2]) : 0;
    if (!constant_) return std::nullopt;
    const Config& config = prog_.env().config;
    const std::size_t n = ops_of_image_.size();
    std::vector<runtime::InsnWord> insns(2);
    std::vector<std::uint32_t> uops(n), relocs(2), index(runtime::KernelTables::index_size(1, 1));
    std::vector<runtime::KernelSlot> stored(1), resident(1);
    runtime::SpanStorage storage(insns.data(), insns.size(), uops.data(), uops.size(),
                                 relocs.data(),
                                 {stored.data(), resident.data(), index.data(), 1, 1});
    runtime::StreamWriter<runtime::SpanStorage> w(config.layout(), config.uop_depth(), storage);
    const bool ok =
        alu ? w.alu(loops_of_image_.data(), loops_of_image_.size(), ops_of_image_.data(), n,
                    static_cast<runtime::AluOp>(op), use_imm != 0, imm)
            : w.gemm(loops_of_image_.data(), loops_of_image_.size(), ops_of_image_.data(), n,
                     c.name == intrin::gemm_reset);
    if (!ok) return std::nullopt;
    const runtime::WrittenKernel& k = w.last_kernel();
    Image image{k.word, k.opcode, {storage.uops() + k.dram, storage.uops() + k.dram + k.size}};
    const auto it = std::find(images_.begin(), images_.end(), image);
    if (it != images_.end()) return static_cast<std::size_t>(it - images_.begin());
    images_.push_back(std::move(image));
    return images_.size() - 1;
  }

  std::uint32_t region(const te::Buffer& b) const { return prog_.region_of(b.get()); }
  // A kernel's regions as its again and image calls take them: ALU dst, src; GEMM reset,
  // acc, inp, wgt (a reset's inp and wgt 0).
  std::string accesses(const te::CallNode& c) const {
    if (c.name == intrin::alu)
      return fmt::format("{}u, {}u", region(c.buffers[0]), region(c.buffers[1]));
    if (c.name == intrin::gemm_reset) return fmt::format("true, {}u, 0u, 0u", region(c.buffers[0]));
    return fmt::format("false, {}u, {}u, {}u", region(c.buffers[0]), region(c.buffers[1]),
                       region(c.buffers[2]));
  }
  std::size_t param(const te::Buffer& b) const { return prog_.param_index(b.get()); }

  // A micro-op kernel's statements: its loops and micro-ops collected, then its instruction.
  void kernel(const tir::AttrNode& n, const te::CallNode& c) {
    const std::size_t begin = out.size();
    line("r.kernel_begin();");
    kernel_ = true;
    in_kernel_ = true;
    constant_ = true;
    loops_of_image_.clear();
    ops_of_image_.clear();
    visit(n.body);
    in_kernel_ = false;
    // a kernel of constants is encoded now: its site passes the image, with its regions
    if (const auto image = encode(c)) {
      out.resize(begin);
      kernel_call_at_ = out.size();
      kernel_shape_ = fmt::format("image {}", *image);
      line("if (!r.{}_image({}_kernels[{}], {})) return false;",
           c.name == intrin::alu ? "alu" : "gemm", function_, *image, accesses(c));
      kernel_ = false;
      return;
    }
    // what the memo's entry holds: the micro-ops and loops printed so far, and the call's
    // operation without its regions
    kernel_call_at_ = out.size();
    kernel_shape_ = c.name == intrin::alu ? fmt::format("alu {} {} {}", value(c.args[0]),
                                                        value(c.args[1]), value(c.args[2]))
                                          : c.name;
    if (c.name == intrin::alu) {
      line("if (!r.alu(dlavm::runtime::AluOp({}), {} != 0, {}, {}u, {}u)) return false;",
           value(c.args[0]), value(c.args[1]), value(c.args[2]), region(c.buffers[0]),
           region(c.buffers[1]));
    } else if (c.name == intrin::gemm_reset) {
      line("if (!r.gemm(true, {}u, 0u, 0u)) return false;", region(c.buffers[0]));
    } else {
      line("if (!r.gemm(false, {}u, {}u, {}u)) return false;", region(c.buffers[0]),
           region(c.buffers[1]), region(c.buffers[2]));
    }
    kernel_ = false;
  }

  // A kernel encoded as runtime::KernelImage prints it.
  struct Image {
    runtime::InsnWord word;
    runtime::Opcode opcode;
    std::vector<std::uint32_t> uops;
    bool operator==(const Image&) const = default;
  };

  const Program& prog_;
  std::string_view function_;
  std::span<const std::string> dims_;
  std::vector<bool> used_;
  std::unordered_map<std::uint64_t, std::string> names_;
  std::vector<ne::Var> loop_vars_;         // the loops open outside any kernel, outermost first
  std::vector<std::int64_t> loop_counts_;  // their largest iteration counts (-1: no bound)
  std::vector<bool> keys_;                 // which of them the kernel being printed reads
  std::vector<std::string> hoisted_;       // its values that only those loops (and dims) give
  bool reads_body_loop_ = false;           // and whether one of them is inside a memoized loop,
  bool reads_innermost_ = false;           // or the innermost
  std::string memos_;                      // the kernel sites' memo declarations
  std::unordered_map<std::string, SharedSite> shared_sites_;  // by a kernel and its keys
  std::size_t kernel_call_at_ = 0;  // where the kernel printed last printed its call
  std::string kernel_shape_;        // and that call's operation
  int loops_ = 0, depth_ = 1, kernels_ = 0, entry_memos_ = 0;
  bool in_kernel_ = false;     // printing a kernel's loops and micro-ops
  bool tiling_ = false;        // printing a tiled loop's body (no tiled loop inside it)
  bool plain_inside_ = false;  // whose inner loops are not memoized
  // the loops opened in such a body, as a memoized loop's (LoopMemoScan::opened_inside): a
  // kernel whose keys read them keeps kKernelMemoEntries entries, so that at -Os, where the
  // tiles are a loop memo's iterations (runtime::TiledLoopMemo), a copy finds each of them
  std::vector<std::uint64_t> tile_body_loops_;
  bool steps_ = false;               // printing a tiled loop's transfers' steps (TileTape::step)
  std::optional<ne::Var> tile_var_;  // the tiled loop's variable
  bool kernel_ = false;              // printing a kernel, its instruction included
  bool dram_ = false;                // printing a transfer's DRAM offset
  bool constant_ = false;            // the kernel being printed has constant fields alone
  std::vector<runtime::KernelLoop> loops_of_image_;  // its loops and micro-ops, if so
  std::vector<runtime::UopOp> ops_of_image_;
  std::vector<Image> images_;     // the kernels encoded, in the order their sites first printed
  std::optional<MemoLoop> memo_;  // the loop being memoized
  const tir::ForNode* plain_ = nullptr;  // the loop printed again, not memoized
};

}  // namespace detail

DLAVM_INLINE std::vector<std::string> dims_read(const Program& p) {
  struct Reads : tir::StmtVisitor<Reads> {
    std::vector<std::string> dims;
    std::vector<std::uint64_t> loops;
    void index(const ne::Expr& e) {
      for (const auto& v : ne::free_vars(e)) {
        const auto& var = *v.as<ne::VarNode>();
        if (std::find(loops.begin(), loops.end(), var.id) == loops.end() &&
            std::find(dims.begin(), dims.end(), var.name) == dims.end())
          dims.push_back(var.name);
      }
    }
    void visit_for(const tir::ForNode& n, const tir::Stmt&) {
      index(n.min);
      index(n.extent);
      loops.push_back(n.var.id());
      visit(n.body);
      loops.pop_back();
    }
    void visit_if(const tir::IfThenElseNode& n, const tir::Stmt& s) {
      index(n.cond);
      tir::StmtVisitor<Reads>::visit_if(n, s);
    }
    void visit_evaluate(const tir::EvaluateNode& n, const tir::Stmt&) {
      if (const auto* c = n.value.as<te::CallNode>())
        for (const auto& a : c->args)
          if (const auto* i = a.as<te::IndexNode>()) index(i->index);
    }
  } reads;
  reads.visit(p.func().body);
  return reads.dims;
}

DLAVM_INLINE std::string regions_source(const Program& p) {
  std::string s = "{";
  for (const auto& r : p.regions())
    s += fmt::format("{}{{dlavm::runtime::MemId({}), {}, {}, {}, {:#x}ULL}}",
                     s.size() > 1 ? ", " : "", static_cast<int>(r.memory), r.begin, r.end, r.arm,
                     r.overlap_mask);
  return s + "}";
}

DLAVM_INLINE std::string config_source(const Config& c) {
  std::string elem;
  for (int m = 0; m < runtime::kMemIdCount; ++m)
    elem += fmt::format("{}{}", m ? ", " : "", c.elem_bytes(static_cast<runtime::MemId>(m)));
  return fmt::format(
      "inline constexpr dlavm::runtime::IsaLayout kLayout =\n"
      "    dlavm::runtime::IsaLayout::make({}, {}, {}, {});\n"
      "using WriterLayout = dlavm::runtime::StaticLayout<kLayout>;  // fields at constant places\n"
      "inline constexpr std::uint32_t kUopDepth = {};\n"
      "inline constexpr dlavm::runtime::ElemBytes kElemBytes = {{{{{}}}}};\n",
      c.log_uop_depth(), c.log_inp_depth(), c.log_wgt_depth(), c.log_acc_depth(), c.uop_depth(),
      elem);
}

DLAVM_INLINE std::string replay_source(const Program& p, std::string_view function,
                                       std::span<const std::string> dims) {
  detail::ReplayPrinter printer(p, function, dims);
  printer.visit(p.func().body);
  const std::string images = printer.images();  // (before the function, which names them)
  return images +
         fmt::format(
             "// The calls of VTA program '{}' ({} on-chip regions, kernels of at most {} "
             "micro-ops).\n"
             "template <class Storage, class Layout>\n"
             "constexpr bool {}_calls(dlavm::runtime::Replay<Storage, Layout>& r, "
             "const std::int64_t* dims) {{\n"
             "  (void)dims;\n"
             "{}{}"
             "  return r.ok();\n"
             "}}\n"
             "// Its replay: where a call fails, the Replay forgets the memos the calls' frame "
             "held\n"
             "// (Replay::abandon), and may go on once the writer's error is cleared.\n"
             "template <class Storage, class Layout>\n"
             "constexpr bool {}(dlavm::runtime::Replay<Storage, Layout>& r, const std::int64_t* "
             "dims) {{\n"
             "  return {}_calls(r, dims) || r.abandon();\n"
             "}}\n",
             p.name(), p.regions().size(), p.max_kernel_ops(), function, printer.prologue(),
             fmt::to_string(printer.out), function, function);
}

}  // namespace dlavm::vta

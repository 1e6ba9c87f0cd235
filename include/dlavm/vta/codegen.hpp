// C++ for a program's replay: the loops vta::Program::instantiate interprets on the host,
// printed as code that firmware compiles. The function it writes,
//
//   template <class Storage, class Layout>
//   constexpr bool <name>(dlavm::runtime::Replay<Storage, Layout>& r, const std::int64_t* dims)
//
// (Layout: runtime::StaticLayout<kLayout> in firmware, where the layout is a constant) calls the
// same runtime::Replay methods with the same values the host computes, the index expressions of
// symbolic fields compiled by the firmware's own compiler, so it writes the same words
// (tests/deploy checks them for many dim values). A micro-op kernel inside loops is memoized
// (runtime::KernelMemo) on the values of those loops its fields read, computed before it:
// entered again with the same values, it writes its instruction again without collecting and
// encoding its micro-ops, as the host's replay plan does. A kernel of constants (loops,
// micro-ops, operation) is encoded as the code is printed: `<name>_kernels`, a table of
// runtime::KernelImage before the function, holds its words, and its site passes its image
// (Replay::alu_image, gemm_image). An outermost loop (of three
// iterations or more) whose body reads its variable only in values computable at the top of an
// iteration and in DRAM offsets is memoized on those values (runtime::LoopMemo): iterations
// like the one before are copied, whole when every DRAM offset is affine in the variable. A
// kernel its body enters with the values of a loop inside it keeps the host plan's
// runtime::kKernelMemoEntries entries, so that a copy finds each kernel again; one keyed on the
// innermost loop around it, a loop inside another of kKernelMemoEntries iterations at most
// (ne::bounds of its count), an entry per iteration, so that the loop entered again finds
// each kernel again; others one. Such a loop whose iteration holds more than 32 calls is tiled
// instead (runtime::TileMemo, docs/vta.md): printed plain, its inner loops memoized where an
// iteration holds more calls than a loop memo would (384), then each transfer's DRAM step from
// a tile to the next, listed for the tile being recorded (the first), each iteration after
// the first copied whole from the one before where it starts as the first did (or would, but
// for the stores before it it waits for); without the time shortcuts (-Os) a loop memo where
// one holds an iteration (runtime::TiledLoopMemo).
// The memos' arrays (the calls of an iteration at the dims' largest values, at most 384: 28 KiB
// with 15 regions; a tile memo's regions' states twice, their first writes and its
// transfers, 9 KiB (9,176 bytes) for the integer softmax's 25 regions and 88 transfers) are on
// the stack, declared with the loop. It needs only <dlavm/runtime/replay.hpp>, is C++17 and
// allocation-free, and can run in a constant expression: a program without symbolic dims is a
// constant stream.
//
//   const std::vector<std::string> dims = {"batch"};       // dims[0] is `batch`
//   std::string code = vta::replay_source(prog, "replay_fc1", dims);
//
// A symbolic dim the program reads that `dims` does not name, or a division by anything but
// a positive constant, is a ValueError naming the program and the expression.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/vta/program.hpp>

#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dlavm::vta {

std::string replay_source(const Program& p, std::string_view function,
                          std::span<const std::string> dims);

// The symbolic dims a program's loops and fields read (by name, in order of first use): none
// for a program whose stream is the same for every run.
std::vector<std::string> dims_read(const Program& p);

// The on-chip regions of a program as a C++ initializer of runtime::SramRegion, in the order
// its replay indexes them, each with its overlap mask (the tracker's reset then compares no
// pairs): "{{dlavm::runtime::MemId(2), 0, 16, 0, 0x1ULL}, ...}".
std::string regions_source(const Program& p);

// A configuration's constants the replay needs, as C++ declarations: `kLayout` (the ISA
// layout), `kUopDepth` and `kElemBytes`.
std::string config_source(const Config& c);

// An index expression as C++ over the given names of its variables (runtime's floor_div,
// floor_mod, min and max): what replay_source writes for each field.
std::string cpp_expr(const ne::Expr& e,
                     const std::function<std::string(const ne::VarNode&)>& name_of);

}  // namespace dlavm::vta

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/vta/codegen-inl.hpp>
#endif

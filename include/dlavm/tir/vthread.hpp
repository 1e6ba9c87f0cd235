// Virtual threads: a `vthread (tx, 0, n)` loop (Stage::bind to a thread axis) runs its body
// n times as independent threads whose statements are interleaved, each thread with its own
// copy of every buffer allocated inside. This is how TVM's VTA flow gets double buffering:
// while one thread computes on its buffers, the load module can fill the other thread's.
//
// The loop is pushed inward and replicated at the statements:
//   - a loop whose bounds do not depend on tx is shared: for (k) { threads of the body };
//   - consecutive statements of one *group* (the caller's key, e.g. the VTA module that runs
//     them) are replicated as a block: [s1 s2](tx=0), [s1 s2](tx=1), ...;
//   - allocations inside become one buffer per thread ("name.v0", "name.v1", ...);
//   - a loop or guard whose bounds depend on tx is replicated whole.
// Threads may interleave this way because they are independent: no thread writes what
// another reads. The caller checks that for its own intrinsics (buffers allocated outside
// the loop must not be written inside).
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/ne.hpp>
#include <dlavm/te.hpp>
#include <dlavm/tir/stmt.hpp>

#include <fmt/format.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

namespace dlavm::tir {

// Group of a leaf statement (Store or Evaluate): statements of one group may be replicated
// as a block.
using VThreadGroupOf = std::function<int(const Stmt&)>;

// Replaces every virtual-thread loop of s by its interleaved threads (see above).
Stmt inject_virtual_threads(const Stmt& s, VThreadGroupOf group_of);

}  // namespace dlavm::tir

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/tir/vthread-inl.hpp>
#endif

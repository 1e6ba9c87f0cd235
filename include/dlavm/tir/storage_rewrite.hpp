// In-place reuse of element-wise stages (part of TVM's StorageRewrite): in
//   allocate A, B { ...; A[i] = ...; B[i] = f(A[i], ...); ...; (nothing touches A) }
// B can live in A's storage: the stage reads each element of A once, at the index it writes,
// and A is dead afterwards. B is renamed A and its allocation dropped. On an accelerator whose
// vector unit updates its destination in place (VTA's ALU), this also removes the copy that
// an out-of-place stage would need, and it is what lets a chain of element-wise stages
// (shift, clip, cast) fit one accumulator tile set.
//
// Conditions, checked on each sequence directly inside a run of allocations (no loop between
// the allocation and the sequence, so that the buffers live for one pass over it):
//   - the statement is a loop nest (annotations allowed) around one store to B, B and A
//     both allocated by that run, same scope, dtype and size;
//   - every load of A in the stored value is at the store's index, and B is not read there;
//   - the store writes each element once: its flat index, affine in the nest's loops, has
//     strides that separate every iteration (otherwise a second write would read A's new
//     value, not the old one);
//   - nothing before the statement touches B, nothing after it touches A.
// A stage that reads A ahead of where it writes, as a halving reduction's level does,
//   B[k] = A[k] op A[k + d]   (k < n, d > 0 constant, B no larger than A)
// lives in A too: no earlier iteration has written an element it reads ahead (the stores move
// forward, the outermost loop furthest, and the element ahead is past every store so far), so
// in place it is dst = dst op src reading only old values; B's elements are a prefix of A's,
// addressed as A's are. And a MIN or MAX of each element with its mirror image in one loop,
//   B[k] = min(A[k], A[n - 1 - k])   (k < n, a constant; B and A alike)
// lives in A: the second of a pair reads its mate's new value min(A[m], A[k]) or the old one,
// and min(A[k], min(A[m], A[k])) = min(A[k], A[m]) (a pair of rows each the MIN of both in one
// ALU instruction: the integer softmax's division).
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/ne.hpp>
#include <dlavm/te.hpp>
#include <dlavm/tir/stmt.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <utility>
#include <vector>

namespace dlavm::tir {

// Applies in-place reuse of element-wise stages throughout s.
Stmt reuse_inplace(const Stmt& s);

}  // namespace dlavm::tir

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/tir/storage_rewrite-inl.hpp>
#endif

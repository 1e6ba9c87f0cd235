// Ref<T>: the reference-counted pointer of the IR nodes (ne::Expr, te::Expr, tir::Stmt), in the
// role of TVM's ObjectPtr. The count lives in the node (RefCounted), so a node is one
// allocation and a reference is one pointer.
//
// Why not std::shared_ptr: every copy and destruction of an IR value is inlined at its use,
// and the IR is copied everywhere. shared_ptr's release (two counts, the single-threaded
// check, two virtual calls) is several times the code of one atomic decrement and an
// out-of-line delete; in header-only mode that code is compiled into every user translation
// unit. Counts are atomic: nodes are immutable and may be shared between threads. While the
// process has one thread (glibc's __libc_single_threaded, as libstdc++'s shared_ptr does)
// they are updated with plain loads and stores: lowering copies IR values constantly, and a
// locked instruction per copy made lowering a conv2d 35% slower (bench/te_lower.cpp).
#pragma once

#include <atomic>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <type_traits>
#include <utility>

#if __has_include(<sys/single_threaded.h>)
#include <sys/single_threaded.h>
#define DLAVM_HAS_SINGLE_THREADED 1
#else
#define DLAVM_HAS_SINGLE_THREADED 0
#endif

namespace dlavm {

namespace detail {
// True while the process has one thread; false where the C library cannot tell.
inline bool single_threaded() {
#if DLAVM_HAS_SINGLE_THREADED
  return ::__libc_single_threaded != 0;
#else
  return false;
#endif
}
}  // namespace detail

// Base of reference-counted nodes. Nodes are immutable once built; the count is the only
// mutable state, and a node is deleted through its virtual destructor.
class RefCounted {
 public:
  RefCounted() = default;
  virtual ~RefCounted() = default;

 protected:
  // A copy is a new node: its count starts at zero, whatever the original's. Protected, so that
  // only a node type that means to be copyable (te::OperationNode) is; the IR node bases
  // delete their copies.
  RefCounted(const RefCounted&) noexcept {}
  RefCounted& operator=(const RefCounted&) noexcept { return *this; }

 private:
  template <class T>
  friend class Ref;

  void retain() const {
    if (detail::single_threaded())
      refs_.store(refs_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    else
      refs_.fetch_add(1, std::memory_order_relaxed);
  }
  // Out of line: the common case (not the last reference) stays a few instructions.
  [[gnu::noinline]] static void destroy(const RefCounted* node) { delete node; }
  void release() const {
    std::uint32_t before;
    if (detail::single_threaded()) {
      before = refs_.load(std::memory_order_relaxed);
      refs_.store(before - 1, std::memory_order_relaxed);
    } else {
      before = refs_.fetch_sub(1, std::memory_order_acq_rel);
    }
    if (before == 1) destroy(this);
  }

  mutable std::atomic<std::uint32_t> refs_{0};
};

// A counted reference to a const T (T derives from RefCounted), or null.
template <class T>
class Ref {
 public:
  Ref() = default;
  Ref(std::nullptr_t) {}  // NOLINT(google-explicit-constructor)
  // Adopts a node just allocated with `new` (see make_ref).
  explicit Ref(const T* node) : ptr_(node) {
    if (ptr_) ptr_->retain();
  }
  Ref(const Ref& o) noexcept : ptr_(o.ptr_) {
    if (ptr_) ptr_->retain();
  }
  Ref(Ref&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)) {}
  // A reference to a derived node converts to a reference to its base.
  template <class U>
  requires std::is_convertible_v<const U*, const T*> Ref(const Ref<U>& o)
  noexcept : Ref(o.get()) {}  // NOLINT(google-explicit-constructor)
  template <class U>
  requires std::is_convertible_v<const U*, const T*> Ref(Ref<U>&& o)
  noexcept : ptr_(o.release_ownership()) {}  // NOLINT
  ~Ref() {
    if (ptr_) ptr_->release();
  }
  Ref& operator=(Ref o) noexcept {
    std::swap(ptr_, o.ptr_);
    return *this;
  }

  const T* get() const { return ptr_; }
  const T& operator*() const { return *ptr_; }
  const T* operator->() const { return ptr_; }
  explicit operator bool() const { return ptr_ != nullptr; }

  // Identity: the same node, not equal nodes (as shared_ptr compares). The order is the
  // addresses' total order, for ordered containers; std::hash below hashes the address.
  friend bool operator==(const Ref& a, const Ref& b) { return a.ptr_ == b.ptr_; }
  friend bool operator==(const Ref& a, std::nullptr_t) { return a.ptr_ == nullptr; }
  friend std::strong_ordering operator<=>(const Ref& a, const Ref& b) {
    return std::compare_three_way()(a.ptr_, b.ptr_);
  }

 private:
  template <class U>
  friend class Ref;
  const T* release_ownership() { return std::exchange(ptr_, nullptr); }

  const T* ptr_ = nullptr;
};

// A new T built from `args`, counted from the start.
template <class T, class... Args>
Ref<T> make_ref(Args&&... args) {
  return Ref<T>(new T(std::forward<Args>(args)...));
}

}  // namespace dlavm

template <class T>
struct std::hash<dlavm::Ref<T>> {
  std::size_t operator()(const dlavm::Ref<T>& r) const noexcept {
    return std::hash<const T*>()(r.get());
  }
};

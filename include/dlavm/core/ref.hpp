// Ref<T>: the reference-counted pointer of the IR nodes (ne::Expr, te::Expr, tir::Stmt), in the
// role of TVM's ObjectPtr. The count lives in the node (RefCounted), so a node is one
// allocation and a reference is one pointer.
//
// Why not std::shared_ptr: every copy and destruction of an IR value is inlined at its use,
// and the IR is copied everywhere. shared_ptr's release (two counts, the single-threaded
// check, two virtual calls) is several times the code of one atomic decrement and an
// out-of-line delete; in header-only mode that code is compiled into every user translation
// unit. Counts are atomic: nodes are immutable and may be shared between threads.
#pragma once

#include <atomic>
#include <cstdint>
#include <type_traits>
#include <utility>

namespace dlavm {

// Base of reference-counted nodes. Nodes are immutable once built; the count is the only
// mutable state, and a node is deleted through its virtual destructor.
class RefCounted {
 public:
  RefCounted() = default;
  // A copy is a new node: its count starts at zero, whatever the original's.
  RefCounted(const RefCounted&) noexcept {}
  RefCounted& operator=(const RefCounted&) noexcept { return *this; }
  virtual ~RefCounted() = default;

 private:
  template <class T>
  friend class Ref;

  void retain() const { refs_.fetch_add(1, std::memory_order_relaxed); }
  // Out of line and cold: the common case (not the last reference) stays one instruction.
  [[gnu::noinline]] static void destroy(const RefCounted* node) { delete node; }
  void release() const {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) destroy(this);
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
  Ref(const Ref& o) : ptr_(o.ptr_) {
    if (ptr_) ptr_->retain();
  }
  Ref(Ref&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)) {}
  // A reference to a derived node converts to a reference to its base.
  template <class U>
  requires std::is_convertible_v<const U*, const T*> Ref(const Ref<U>& o)
      : Ref(o.get()) {}  // NOLINT(google-explicit-constructor)
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

  friend bool operator==(const Ref& a, const Ref& b) { return a.ptr_ == b.ptr_; }
  friend bool operator==(const Ref& a, std::nullptr_t) { return a.ptr_ == nullptr; }

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

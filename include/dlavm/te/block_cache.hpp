// The storage of large arrays: a per-thread cache of freed blocks, by exact size, so that a
// model run after the first reuses the memory of the one before instead of taking fresh pages
// from the operating system each time (a float CNN on the host allocates every activation anew:
// before the cache, page faults and the kernel's zeroing of new pages were a third of its
// time). A block's size is rounded up to one of eight classes per power of two (at most an
// eighth more), so that arrays whose size changes a little from run to run share blocks: a
// decode step's scores grow by one key a step, and each step took fresh pages for them.
// Blocks below kMinBytes go straight to operator new; the cache holds at most kMaxCachedBytes
// (2 GiB) and frees the rest. The cap holds the working set of a long prompt's host steps: the
// gallery's LLM layer at 2,048 tokens cycles 810 MB of blocks (its scores and probabilities as
// int64, 256 MiB each, and three float arrays of 128 MiB), which a cap of 512 MiB dropped and
// took again as new pages every run; the process's peak memory is the same either way. Under
// AddressSanitizer it caches nothing and rounds nothing, so that a use after free or an
// overflow is still reported.
//
//   std::vector<float, te::CachingAllocator<float>> v(1 << 20);   // 4 MiB, cached when freed
#pragma once

#include <bit>
#include <cstddef>
#include <map>
#include <new>

namespace dlavm::te {

namespace detail {

class BlockCache {
 public:
  static constexpr std::size_t kMinBytes = std::size_t{1} << 16;
  static constexpr std::size_t kMaxCachedBytes = std::size_t{1} << 31;
  static constexpr std::align_val_t kAlignment{64};

  BlockCache() { alive() = true; }
  BlockCache(const BlockCache&) = delete;
  BlockCache& operator=(const BlockCache&) = delete;
  ~BlockCache() {
    alive() = false;
    // (unsized deletes: Clang before 19 declares the sized ones only with -fsized-deallocation)
    for (const auto& entry : free_) ::operator delete(entry.second, kAlignment);
  }

  // The size of the block that holds `bytes` (the caller's size when nothing is cached).
  static constexpr std::size_t block_size(std::size_t bytes) {
    if (bytes < kMinBytes || !enabled()) return bytes;
    const std::size_t step = std::size_t{1} << (std::bit_width(bytes) - 4);  // 1/8 of the power
    return (bytes + step - 1) & ~(step - 1);
  }

  static void* allocate(std::size_t bytes) {
    const std::size_t size = block_size(bytes);
    if (bytes >= kMinBytes && enabled()) {
      auto& c = instance();
      const auto it = c.free_.find(size);
      if (it != c.free_.end()) {
        void* p = it->second;
        c.free_.erase(it);
        c.cached_ -= size;
        return p;
      }
    }
    return ::operator new(size, kAlignment);
  }

  // Whether freed blocks are kept (not under AddressSanitizer), and how many bytes this thread
  // keeps now.
  static constexpr bool caching() { return enabled(); }
  static std::size_t cached_bytes() { return alive() ? instance().cached_ : 0; }

  static void deallocate(void* p, std::size_t bytes) {
    const std::size_t size = block_size(bytes);
    // (a block freed after its thread's cache is gone, at exit, goes back at once)
    if (bytes >= kMinBytes && enabled() && alive()) {
      auto& c = instance();
      if (c.cached_ + size <= kMaxCachedBytes) {
        c.free_.emplace(size, p);
        c.cached_ += size;
        return;
      }
    }
    ::operator delete(p, kAlignment);
  }

 private:
  static constexpr bool enabled() {
#if defined(__SANITIZE_ADDRESS__)
    return false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    return false;
#else
    return true;
#endif
#else
    return true;
#endif
  }
  static BlockCache& instance() {
    thread_local BlockCache cache;
    return cache;
  }
  // (trivially destructible: readable while the thread's other thread_locals are destroyed)
  static bool& alive() {
    thread_local bool flag = false;
    return flag;
  }

  std::multimap<std::size_t, void*> free_;
  std::size_t cached_ = 0;
};

}  // namespace detail

// A std::allocator for arrays' elements, through detail::BlockCache.
template <class T>
struct CachingAllocator {
  using value_type = T;
  CachingAllocator() = default;
  template <class U>
  CachingAllocator(const CachingAllocator<U>&) noexcept {}  // NOLINT(google-explicit-constructor)
  T* allocate(std::size_t n) {
    return static_cast<T*>(detail::BlockCache::allocate(n * sizeof(T)));
  }
  void deallocate(T* p, std::size_t n) noexcept {
    detail::BlockCache::deallocate(p, n * sizeof(T));
  }
  template <class U>
  bool operator==(const CachingAllocator<U>&) const noexcept {
    return true;
  }
};

}  // namespace dlavm::te

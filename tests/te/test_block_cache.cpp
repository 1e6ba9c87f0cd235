// te's block cache: a large array's storage freed comes back for the next array of that size
// in the same thread; small arrays, and blocks beyond the cap, go to the heap; an array's
// values do not depend on whose block it got (a fresh NDArray is zeros).
#include <dlavm/te.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

namespace block_cache_test {

namespace te = dlavm::te;
using Cache = te::detail::BlockCache;
using dlavm::DType;

TEST_CASE("block cache: a freed large block serves the next array of its size") {
  if (!Cache::caching()) return;  // AddressSanitizer: every block goes back to the heap
  const float* first = nullptr;
  {
    te::NDArray a(DType::float32(), {256, 256});  // 256 KiB
    a.fdata()[7] = 3.0f;
    first = a.fdata().data();
  }
  const std::size_t held = Cache::cached_bytes();
  CHECK(held >= 256 * 256 * sizeof(float));
  te::NDArray b(DType::float32(), {256, 256});
  CHECK(b.fdata().data() == first);  // the same block
  CHECK(b.fdata()[7] == 0.0f);       // and zeros, as every new array
  CHECK(Cache::cached_bytes() == held - 256 * 256 * sizeof(float));
  // a size of another class takes another block; integers (int64 elements) use the cache too
  te::NDArray c(DType::float32(), {200, 256});
  CHECK(c.fdata().data() != first);
  const std::int64_t* ints = nullptr;
  {
    te::NDArray i(DType::int8(), {128, 128});  // 128 KiB of int64
    ints = i.data().data();
  }
  te::NDArray j(DType::int32(), {128, 128});
  CHECK(j.data().data() == ints);
}

TEST_CASE("block cache: small blocks and blocks past the cap are not kept") {
  const std::size_t before = Cache::cached_bytes();
  { te::NDArray small(DType::float32(), {16, 16}); }
  CHECK(Cache::cached_bytes() == before);
  if (!Cache::caching()) return;  // AddressSanitizer: nothing is kept, no cap to reach
  // more than the cap holds (blocks of 64 MiB whose pages nobody touches, so that the test
  // takes no memory): the cache keeps at most kMaxCachedBytes
  constexpr std::size_t kBlock = std::size_t{64} << 20;
  std::vector<void*> many;
  for (std::size_t held = 0; held <= Cache::kMaxCachedBytes + kBlock; held += kBlock)
    many.push_back(Cache::allocate(kBlock));
  for (void* p : many) Cache::deallocate(p, kBlock);
  CHECK(Cache::cached_bytes() <= Cache::kMaxCachedBytes);
  CHECK(Cache::cached_bytes() > Cache::kMaxCachedBytes - kBlock);
  // a 2,048-token prompt's host arrays fit: two of 256 MiB and three of 128 MiB
  CHECK(Cache::kMaxCachedBytes >= (std::size_t{2} * 256 + 3 * 128) << 20);
  // (the blocks go back to the heap: later tests start from what the cache held before)
  for (std::size_t k = 0; k < many.size(); ++k) many[k] = Cache::allocate(kBlock);
  for (void* p : many) ::operator delete(p, Cache::kAlignment);
  CHECK(Cache::cached_bytes() <= before);
}

TEST_CASE("block cache: sizes within an eighth of each other share a block") {
  // 256 KiB: blocks of 32 KiB steps; 255 x 256 floats (255 KiB) and 256 x 256 round up alike
  CHECK(Cache::block_size(256 * 256 * 4) == (Cache::caching() ? 256 * 1024 : 256 * 256 * 4));
  CHECK(Cache::block_size(255 * 256 * 4) == (Cache::caching() ? 256 * 1024 : 255 * 256 * 4));
  CHECK(Cache::block_size((256 * 1024) + 1) ==
        (Cache::caching() ? (256 + 32) * 1024 : (256 * 1024) + 1));
  CHECK(Cache::block_size(100) == 100);  // small blocks are not cached: their own size
  if (!Cache::caching()) return;
  // a decode step's scores, one key longer each step: the step after reuses the block
  const std::int64_t* first = nullptr;
  {
    te::NDArray a(DType::int8(), {1, 8, 1, 2047});
    a.data()[5] = 9;
    first = a.data().data();
  }
  te::NDArray b(DType::int8(), {1, 8, 1, 2048});
  CHECK(b.data().data() == first);
  CHECK(b.data()[5] == 0);  // zeros, as every new array
  CHECK(b.data()[(8 * 2048) - 1] == 0);
}

}  // namespace block_cache_test

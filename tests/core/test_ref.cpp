#include <dlavm/core.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <map>
#include <thread>
#include <type_traits>
#include <unordered_set>
#include <utility>
#include <vector>

using dlavm::make_ref;
using dlavm::Ref;
using dlavm::RefCounted;

namespace {

// Counts live nodes, so that a test sees each node deleted exactly once and only when its
// last reference goes (ASan would also report a double delete or a leak).
std::atomic<int> live{0};

struct Base : RefCounted {
  explicit Base(int v) : value(v) { ++live; }
  Base(const Base& o) : RefCounted(o), value(o.value) { ++live; }
  ~Base() override { --live; }
  int value;
};

struct Derived final : Base {
  explicit Derived(int v) : Base(v) {}
};

}  // namespace

TEST_CASE("ref: a node lives exactly as long as its last reference") {
  REQUIRE(live == 0);
  {
    Ref<Base> a = make_ref<Base>(7);
    CHECK(live == 1);
    {
      Ref<Base> b = a;  // copy
      CHECK(b == a);
      CHECK(b->value == 7);
      Ref<Base> c = std::move(b);  // move leaves the source null
      CHECK(b == nullptr);
      CHECK(c == a);
      CHECK(live == 1);
    }
    CHECK(live == 1);
    auto& alias = a;
    a = alias;  // self-assignment keeps the node
    CHECK(live == 1);
    CHECK(a->value == 7);
    a = make_ref<Base>(8);  // the first node goes, the second stays
    CHECK(live == 1);
    CHECK(a->value == 8);
    a = nullptr;
    CHECK(live == 0);
    CHECK(!a);
  }
  CHECK(live == 0);
}

TEST_CASE("ref: a reference to a derived node converts to its base and deletes through it") {
  {
    Ref<Derived> d = make_ref<Derived>(3);
    Ref<Base> copied = d;
    Ref<Base> moved = std::move(d);
    CHECK(d.get() == nullptr);
    CHECK(copied == moved);
    CHECK(live == 1);
    copied = nullptr;
    CHECK(live == 1);
  }
  CHECK(live == 0);
}

TEST_CASE("ref: a copied node has its own count") {
  {
    Ref<Base> a = make_ref<Base>(5);
    Ref<Base> extra = a;
    Ref<Base> copy = make_ref<Base>(*a);  // a new node, whatever the original's count
    CHECK(live == 2);
    CHECK(copy != a);
    a = nullptr;
    extra = nullptr;
    CHECK(live == 1);  // the copy did not inherit the original's references
    CHECK(copy->value == 5);
  }
  CHECK(live == 0);
}

TEST_CASE("ref: threads copying and dropping one node delete it once") {
  {
    Ref<Base> shared = make_ref<Base>(1);
    std::atomic<int> wrong{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([shared, &wrong] {
        for (int i = 0; i < 20000; ++i) {
          Ref<Base> copy = shared;
          Ref<Base> moved = std::move(copy);
          if (moved->value != 1 || copy) ++wrong;
        }
      });
    for (auto& t : threads) t.join();
    CHECK(wrong == 0);
    CHECK(live == 1);
  }
  CHECK(live == 0);
}

TEST_CASE("ref: references hash and order by identity, for the standard containers") {
  {
    const Ref<Base> a = make_ref<Base>(1), b = make_ref<Base>(1);
    const Ref<Base> a2 = a;
    std::unordered_set<Ref<Base>> set{a, b, a2};
    CHECK(set.size() == 2);  // equal values, distinct nodes
    CHECK(set.count(a2) == 1);
    std::map<Ref<Base>, int> order{{a, 1}, {b, 2}};
    CHECK(order.at(a2) == 1);
    CHECK((a < b) != (b < a));
    CHECK((a <=> a2) == 0);
  }
  CHECK(live == 0);
  // The IR node bases are not copyable (a copy would slice); a node type may opt in.
  static_assert(!std::is_copy_constructible_v<RefCounted>);
  static_assert(std::is_copy_constructible_v<Base>);
}

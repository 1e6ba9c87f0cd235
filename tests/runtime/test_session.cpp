// runtime/session.hpp's Session over two driver API types of this file:
//   - FakeApi: the block is a plain byte vector at a physical address the test chooses (so the
//     block sits at, above or below the plan's base), every call counted, runs recorded and
//     their result chosen;
//   - SimApi: dlavm's functional simulator (vta::Simulator) as the board, as
//     examples/firmware/sim_driver.cpp has it.
// The model is a vector add built with vta::Builder (two ACC loads, an ALU add, a store) and a
// second stream (a copy), at planned addresses. Checked: the open / close / ready state
// machine and the status of each call made out of order (NotOpen, NotLoaded), NoMemory and
// Misaligned from the driver's block (and from a plan aligned to less than an instruction's
// elements, or to 0), no leak of the block or the device, load_params'
// checks (WrongModel for another checksum or size, the file's own statuses), placing from
// the words and from an insts file leaving identical memory, the relocation of every DRAM
// address by the block's distance from the plan in either direction (each placed field
// compared with the plan's field plus distance / element bytes, from vta::Config), the
// AddressRange refusal of an address that leaves its 32-bit field, run's arguments, cache
// maintenance and DeviceError, replay (words, relocated micro-op loads, StreamError with the
// writer's status), the log lines (derived by hand from the stream), and, on the simulator,
// the outputs of the static streams and of a replay equal a + b cut to 8 bits with the block
// above and below the plan.
#include <dlavm/runtime/session.hpp>
#include <dlavm/vta/hw/builder.hpp>
#include <dlavm/vta/hw/config.hpp>
#include <dlavm/vta/hw/isa.hpp>
#include <dlavm/vta/hw/simulator.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace runtime_session_test {

namespace rt = dlavm::runtime;
namespace vta = dlavm::vta;
using rt::ModelStatus;
using u64 = std::uint64_t;

// ---- the fake driver --------------------------------------------------------------------

struct Fake {
  std::vector<std::uint8_t> memory;  // the block (one at a time)
  u64 phys = 0x100000;               // the physical address of the block
  bool alloc_fails = false, device_fails = false;
  int run_result = 0;
  int mem_allocs = 0, mem_frees = 0, device_allocs = 0, device_frees = 0;
  int runs = 0, flushes = 0, invalidates = 0;
  std::size_t alloc_bytes = 0;
  int alloc_cached = -1;
  u64 run_insn = 0;
  std::uint32_t run_count = 0, run_wait = 0;
  std::vector<rt::InsnWord> run_words;  // what the device found at run_insn
  u64 flush_phys = 0, invalidate_phys = 0;
  int flush_bytes = 0, invalidate_bytes = 0;
  bool flushed_before_run = false;
};
Fake fake;
int device_handle;

struct FakeApi {
  static VTADeviceHandle device_alloc() {
    ++fake.device_allocs;
    return fake.device_fails ? nullptr : &device_handle;
  }
  static void device_free(VTADeviceHandle h) {
    CHECK(h == &device_handle);
    ++fake.device_frees;
  }
  static int device_run(VTADeviceHandle h, vta_phy_addr_t insn, std::uint32_t count,
                        std::uint32_t wait) {
    CHECK(h == &device_handle);
    ++fake.runs;
    fake.flushed_before_run = fake.flushes == fake.runs;
    fake.run_insn = insn;
    fake.run_count = count;
    fake.run_wait = wait;
    fake.run_words.resize(count);
    std::memcpy(fake.run_words.data(), fake.memory.data() + (insn - fake.phys), count * 16u);
    return fake.run_result;
  }
  static void* mem_alloc(std::size_t size, int cached) {
    ++fake.mem_allocs;
    if (fake.alloc_fails) return nullptr;
    fake.alloc_bytes = size;
    fake.alloc_cached = cached;
    fake.memory.assign(size, 0xCD);  // not zero: what the session leaves alone shows
    return fake.memory.data();
  }
  static void mem_free(void* p) {
    CHECK(p == fake.memory.data());
    ++fake.mem_frees;
  }
  static vta_phy_addr_t phy_addr(void* p) {
    CHECK(p == fake.memory.data());
    return static_cast<vta_phy_addr_t>(fake.phys);
  }
  static void copy_from_host(void* dst, const void* src, std::size_t n) {
    std::memcpy(dst, src, n);
  }
  static void copy_to_host(void* dst, const void* src, std::size_t n) { std::memcpy(dst, src, n); }
  static void flush(void* v, vta_phy_addr_t p, int n) {
    CHECK(v == fake.memory.data());
    ++fake.flushes;
    fake.flush_phys = p;
    fake.flush_bytes = n;
  }
  static void invalidate(void* v, vta_phy_addr_t p, int n) {
    CHECK(v == fake.memory.data());
    ++fake.invalidates;
    fake.invalidate_phys = p;
    fake.invalidate_bytes = n;
  }
};

// ---- the simulator as the board ------------------------------------------------------------

struct Board {
  vta::Simulator sim{vta::Config{}};
  std::map<const void*, u64> phys;
  int devices = 0;
  std::string last_error;
};
Board* board = nullptr;

struct SimApi {
  static VTADeviceHandle device_alloc() {
    ++board->devices;
    return board;
  }
  static void device_free(VTADeviceHandle) { --board->devices; }
  static int device_run(VTADeviceHandle, vta_phy_addr_t insn, std::uint32_t count, std::uint32_t) {
    try {
      return board->sim.run(insn, count).finished ? 0 : 1;
    } catch (const dlavm::Error& e) {
      board->last_error = e.what();
      return 2;
    }
  }
  static void* mem_alloc(std::size_t size, int) {
    const u64 phys = board->sim.dram().alloc(size);
    void* p = board->sim.dram().allocation(phys).data();
    board->phys[p] = phys;
    return p;
  }
  static void mem_free(void* p) {
    board->sim.dram().free(board->phys.at(p));
    board->phys.erase(p);
  }
  static vta_phy_addr_t phy_addr(void* p) { return static_cast<vta_phy_addr_t>(board->phys.at(p)); }
  static void copy_from_host(void* dst, const void* src, std::size_t n) {
    std::memcpy(dst, src, n);
  }
  static void copy_to_host(void* dst, const void* src, std::size_t n) { std::memcpy(dst, src, n); }
  static void flush(void*, vta_phy_addr_t, int) {}
  static void invalidate(void*, vta_phy_addr_t, int) {}
};

// ---- the model --------------------------------------------------------------------------

// Planned offsets from the base: a and b (64 int32 each: 4 accumulator elements) in the
// weight region, the two outputs in the runtime region, the streams' slots, the end.
constexpr u64 kA = 0x0, kB = 0x100, kOut = 0x200, kOut2 = 0x240;
constexpr u64 kInsts0 = 0x400, kInsts1 = 0x600, kReplayInsts = 0x800;
constexpr u64 kUops0 = 0x1000, kUops1 = 0x1100, kReplayUops = 0x1200, kEnd = 0x2000;

rt::ConfigId default_config() { return {{3, 3, 5, 3, 0, 4, 4, 15, 15, 18, 17, 6}}; }

// A model file; an insts file's payload is `uops` micro-op words after its instructions.
std::vector<std::uint8_t> file_of(rt::FileKind kind, const std::vector<std::uint8_t>& payload,
                                  std::uint32_t uops = 0, const char* name = "vadd") {
  rt::FileHeader h;
  h.kind = kind;
  h.config = default_config();
  if (kind == rt::FileKind::Insts) {
    h.queue_insns[1] = static_cast<std::uint32_t>((payload.size() - 4 * uops) / 16);
    h.uop_words = uops;
  }
  h.payload_bytes = payload.size();
  std::strcpy(h.name, name);
  std::vector<std::uint8_t> f(rt::kFileHeaderBytes);
  rt::write_file_header(h, f.data());
  f.insert(f.end(), payload.begin(), payload.end());
  rt::seal_file(f.data());
  return f;
}
// the checksum a file's header holds (what the generated header's ModelInfo holds)
u64 checksum_of(const std::vector<std::uint8_t>& f) {
  return rt::file_checksum(f.data(), f.size() - rt::kFileHeaderBytes);
}

void put_le(std::vector<std::uint8_t>& out, u64 v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

struct Model {
  u64 base = 0;
  rt::ModelInfo info;
  std::vector<std::int32_t> a, b;
  std::vector<std::vector<rt::InsnWord>> words;
  std::vector<std::vector<std::uint32_t>> uops, relocs;
  std::vector<rt::StaticStream> streams;
  std::vector<std::uint8_t> weights, insts;  // the files

  // out = a + b, out2 = b (each cut to 8 bits by the store)
  std::vector<std::int8_t> expected_out() const {
    std::vector<std::int8_t> v;
    for (std::size_t i = 0; i < 64; ++i)
      v.push_back(static_cast<std::int8_t>(static_cast<std::uint32_t>(a[i] + b[i]) & 0xFF));
    return v;
  }
  std::vector<std::int8_t> expected_out2() const {
    std::vector<std::int8_t> v;
    for (std::size_t i = 0; i < 64; ++i)
      v.push_back(static_cast<std::int8_t>(static_cast<std::uint32_t>(b[i]) & 0xFF));
    return v;
  }
};

// A stream at planned addresses, as deploy::emit writes it: its LOAD UOPs pointing at its
// micro-op slot, the instructions with a DRAM address listed.
void add_stream(Model& m, vta::Builder& b, u64 insn_at, u64 uop_at) {
  const vta::Stream s = b.take();
  std::vector<rt::InsnWord> w(s.insns.size());
  REQUIRE(s.relocate((m.base + uop_at) / 4, w.data()));
  std::vector<std::uint32_t> r;
  for (std::size_t i = 0; i < w.size(); ++i) {
    const auto f = vta::decode(vta::Config{}.layout(), w[i]);
    if ((f.opcode == rt::Opcode::Load || f.opcode == rt::Opcode::Store) && f.x_size > 0)
      r.push_back(static_cast<std::uint32_t>(i));
  }
  m.words.push_back(w);
  m.uops.push_back(s.uops);
  m.relocs.push_back(r);
  rt::StaticStream st;
  st.insn_addr = m.base + insn_at;
  st.uop_addr = m.base + uop_at;
  m.streams.push_back(st);
}

Model make_model(u64 base, std::uint64_t seed = 1) {
  const vta::Config config;
  Model m;
  m.base = base;
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 64; ++i) {
    m.a.push_back(static_cast<std::int32_t>(rng() % 2001) - 1000);
    m.b.push_back(static_cast<std::int32_t>(rng() % 2001) - 1000);
  }
  const auto acc = [&](u64 off) { return static_cast<std::int64_t>((base + off) / 64); };
  const auto out = [&](u64 off) { return static_cast<std::int64_t>((base + off) / 16); };
  {
    vta::Builder b(config);
    b.load({.memory = rt::MemId::Acc, .sram = 0, .dram = acc(kA), .x_size = 4});
    b.load({.memory = rt::MemId::Acc, .sram = 4, .dram = acc(kB), .x_size = 4});
    vta::UopKernel k;
    k.loop_begin(4, 1, 1);
    k.push(0, 4);
    k.loop_end();
    b.alu(k, rt::AluOp::Add);
    b.dep_push(rt::Queue::Compute, rt::Queue::Store);
    b.dep_pop(rt::Queue::Compute, rt::Queue::Store);
    b.store({.sram = 0, .dram = out(kOut), .x_size = 4});
    b.finish();
    add_stream(m, b, kInsts0, kUops0);
  }
  {
    vta::Builder b(config);
    b.load({.memory = rt::MemId::Acc, .sram = 8, .dram = acc(kB), .x_size = 4});
    b.dep_push(rt::Queue::Compute, rt::Queue::Store);
    b.dep_pop(rt::Queue::Compute, rt::Queue::Store);
    b.store({.sram = 8, .dram = out(kOut2), .x_size = 4});
    b.finish();
    add_stream(m, b, kInsts1, kUops1);
  }
  std::vector<std::uint8_t> w, in;
  std::uint32_t uop_words = 0;
  for (auto v : m.a) put_le(w, static_cast<std::uint32_t>(v), 4);
  for (auto v : m.b) put_le(w, static_cast<std::uint32_t>(v), 4);
  for (std::size_t k = 0; k < m.words.size(); ++k) {
    for (const auto& x : m.words[k]) {
      put_le(in, x.word[0], 8);
      put_le(in, x.word[1], 8);
    }
    for (auto u : m.uops[k]) put_le(in, u, 4);
    uop_words += static_cast<std::uint32_t>(m.uops[k].size());
    auto& st = m.streams[k];
    st.insns = m.words[k].data();
    st.insn_count = static_cast<std::uint32_t>(m.words[k].size());
    st.uops = m.uops[k].data();
    st.uop_count = static_cast<std::uint32_t>(m.uops[k].size());
    st.relocs = m.relocs[k].data();
    st.reloc_count = static_cast<std::uint32_t>(m.relocs[k].size());
  }
  m.weights = file_of(rt::FileKind::Weights, w);
  m.insts = file_of(rt::FileKind::Insts, in, uop_words);
  auto& i = m.info;
  i.name = "vadd";
  i.config = default_config();
  i.base = base;
  i.end = base + kEnd;
  i.weight = {base, 0x200};
  i.runtime = {base + kOut, 0x80};
  i.insts = {base + kInsts0, 0xC00};
  i.uop = {base + kUops0, 0x1000};
  i.alignment = 256;
  i.weights_bytes = w.size();
  i.weights_checksum = checksum_of(m.weights);
  i.insts_bytes = in.size();
  i.insts_checksum = checksum_of(m.insts);
  return m;
}

template <class Api>
std::vector<std::int8_t> bytes_at(rt::Session<Api>& s, u64 addr, std::size_t n) {
  const auto* p = s.template at<std::int8_t>(addr);
  return {p, p + n};
}

// ---- the state machine (fake driver) ----------------------------------------------------

TEST_CASE("runtime session: calls out of order get NotOpen / NotLoaded, and nothing runs") {
  fake = Fake{};
  const Model m = make_model(fake.phys);
  {
    rt::Session<FakeApi> s;
    CHECK_FALSE(s.is_open());
    CHECK_FALSE(s.ready());
    CHECK(s.load_params(m.weights.data(), m.weights.size()) == ModelStatus::NotOpen);
    CHECK(s.status() == ModelStatus::NotOpen);
    CHECK(s.place(m.streams.data(), m.streams.size()) == ModelStatus::NotOpen);
    CHECK(s.place(m.streams.data(), m.streams.size(), m.insts.data(), m.insts.size()) ==
          ModelStatus::NotOpen);
    CHECK(s.run(m.streams[0]) == ModelStatus::NotLoaded);
    CHECK(s.status() == ModelStatus::NotLoaded);
    REQUIRE(s.open(m.info) == ModelStatus::Ok);
    CHECK(fake.mem_allocs == 1);
    CHECK(fake.alloc_bytes == kEnd);  // the plan's span, one block
    CHECK(fake.alloc_cached == 1);
    CHECK(fake.device_allocs == 1);
    CHECK(s.is_open());
    CHECK_FALSE(s.ready());
    CHECK(s.run(m.streams[0]) == ModelStatus::NotLoaded);  // open, nothing loaded
    REQUIRE(s.load_params(m.weights.data(), m.weights.size()) == ModelStatus::Ok);
    CHECK_FALSE(s.ready());
    CHECK(s.run(m.streams[0]) == ModelStatus::NotLoaded);  // weights but no streams
    REQUIRE(s.place(m.streams.data(), m.streams.size()) == ModelStatus::Ok);
    CHECK(s.ready());
    CHECK(fake.runs == 0);
    REQUIRE(s.run(m.streams[0]) == ModelStatus::Ok);
    CHECK(fake.runs == 1);
    // close: the block and the device go back, the session is as new
    s.close();
    CHECK(fake.mem_frees == 1);
    CHECK(fake.device_frees == 1);
    CHECK_FALSE(s.is_open());
    CHECK_FALSE(s.ready());
    CHECK(s.run(m.streams[0]) == ModelStatus::NotLoaded);
    CHECK(s.load_params(m.weights.data(), m.weights.size()) == ModelStatus::NotOpen);
    s.close();  // twice: nothing more freed
    CHECK(fake.mem_frees == 1);
    CHECK(fake.runs == 1);
    // open again, and again: each open gives back what the last one took
    REQUIRE(s.open(m.info) == ModelStatus::Ok);
    REQUIRE(s.open(m.info) == ModelStatus::Ok);
    CHECK(fake.mem_allocs == 3);
    CHECK(fake.mem_frees == 2);
    CHECK_FALSE(s.ready());  // a new open needs its weights and streams again
  }
  // the destructor closes
  CHECK(fake.mem_frees == 3);
  CHECK(fake.device_frees == 3);
  CHECK(fake.device_allocs == 3);
}

TEST_CASE("runtime session: NoMemory and Misaligned from the driver; nothing leaks") {
  fake = Fake{};
  const Model m = make_model(0x100000);
  SUBCASE("no block") {
    fake.alloc_fails = true;
    {
      rt::Session<FakeApi> s;
      CHECK(s.open(m.info) == ModelStatus::NoMemory);
      CHECK(s.status() == ModelStatus::NoMemory);
      CHECK_FALSE(s.is_open());
      CHECK(fake.device_allocs == 0);
      CHECK(s.load_params(m.weights.data(), m.weights.size()) == ModelStatus::NotOpen);
    }
    CHECK(fake.mem_frees == 0);
    CHECK(fake.device_frees == 0);
  }
  SUBCASE("no device") {
    fake.device_fails = true;
    {
      rt::Session<FakeApi> s;
      CHECK(s.open(m.info) == ModelStatus::NoMemory);
      CHECK_FALSE(s.is_open());
      CHECK(s.place(m.streams.data(), m.streams.size()) == ModelStatus::NotOpen);
    }
    CHECK(fake.mem_frees == 1);  // the block it had is given back
    CHECK(fake.device_frees == 0);
  }
  SUBCASE("a block that breaks the plan's alignment") {
    for (u64 off : {u64{0x80}, u64{0x10}, u64{4}}) {
      CAPTURE(off);
      fake = Fake{};
      fake.phys = 0x200000 + off;
      {
        rt::Session<FakeApi> s;
        CHECK(s.open(m.info) == ModelStatus::Misaligned);
        CHECK_FALSE(s.is_open());
        CHECK(fake.device_allocs == 0);
      }
      CHECK(fake.mem_frees == 1);
    }
    // below the plan and aligned: fine (the distance is negative, a multiple of 256)
    fake = Fake{};
    fake.phys = 0x100000 - 0x300;
    rt::Session<FakeApi> s;
    CHECK(s.open(m.info) == ModelStatus::Ok);
  }
  SUBCASE("a plan no int counts, or that ends before it begins: no block is asked for") {
    // the driver's cache calls take the block's bytes as an int: 2 GiB would be negative, and
    // 4 GiB a block of 0 bytes where size_t has 32 bits
    for (const u64 span : {u64{0x80000000}, u64{0x100000000}, u64{0xC0000000}}) {
      CAPTURE(span);
      Model big = make_model(0x100000);
      big.info.end = big.info.base + span;
      fake = Fake{};
      {
        rt::Session<FakeApi> s;
        CHECK(s.open(big.info) == ModelStatus::NoMemory);
        CHECK_FALSE(s.is_open());
      }
      CHECK(fake.mem_allocs == 0);
    }
    Model backwards = make_model(0x100000);
    backwards.info.end = backwards.info.base - 0x100;
    fake = Fake{};
    rt::Session<FakeApi> s;
    CHECK(s.open(backwards.info) == ModelStatus::NoMemory);
    CHECK(fake.mem_allocs == 0);
  }
  SUBCASE("a plan aligned to less than an instruction's elements, or to nothing") {
    // a hand-written ModelInfo: 16-byte alignment holds the block 16 bytes off, but the
    // streams' accumulator loads move in elements of 64 bytes, which 16 bytes are not
    Model loose = make_model(0x100000);
    loose.info.alignment = 16;
    for (const u64 off : {u64{16}, u64{48}}) {
      CAPTURE(off);
      fake = Fake{};
      fake.phys = 0x100000 + off;
      rt::Session<FakeApi> s;
      REQUIRE(s.open(loose.info) == ModelStatus::Ok);
      CHECK(s.place(loose.streams.data(), loose.streams.size()) == ModelStatus::Misaligned);
      CHECK(s.place(loose.streams.data(), loose.streams.size(), loose.insts.data(),
                    loose.insts.size()) == ModelStatus::Misaligned);
      CHECK(s.status() == ModelStatus::Misaligned);
    }
    // 64 bytes off: every element a whole number away, placed
    fake = Fake{};
    fake.phys = 0x100000 + 64;
    {
      rt::Session<FakeApi> s;
      REQUIRE(s.open(loose.info) == ModelStatus::Ok);
      CHECK(s.place(loose.streams.data(), loose.streams.size()) == ModelStatus::Ok);
    }
    Model none = make_model(0x100000);
    none.info.alignment = 0;
    fake = Fake{};
    fake.phys = 0x100000;
    rt::Session<FakeApi> s;
    CHECK(s.open(none.info) == ModelStatus::Misaligned);
    CHECK_FALSE(s.is_open());
  }
}

TEST_CASE("runtime session: load_params checks the file and that it is this model's") {
  fake = Fake{};
  const Model m = make_model(fake.phys);
  rt::Session<FakeApi> s;
  REQUIRE(s.open(m.info) == ModelStatus::Ok);
  // a valid weights file of another build (other values, same size): WrongModel
  const Model other = make_model(fake.phys, 2);
  CHECK(s.load_params(other.weights.data(), other.weights.size()) == ModelStatus::WrongModel);
  CHECK_FALSE(s.ready());
  // another size: WrongModel
  std::vector<std::uint8_t> shorter(m.weights.begin() + rt::kFileHeaderBytes, m.weights.end() - 4);
  const auto small = file_of(rt::FileKind::Weights, shorter);
  CHECK(s.load_params(small.data(), small.size()) == ModelStatus::WrongModel);
  // a valid file of the same bytes under another model's name: WrongModel
  const std::vector<std::uint8_t> same(m.weights.begin() + rt::kFileHeaderBytes, m.weights.end());
  const auto renamed = file_of(rt::FileKind::Weights, same, 0, "vadd2");
  CHECK(s.load_params(renamed.data(), renamed.size()) == ModelStatus::WrongModel);
  // the file's own statuses
  CHECK(s.load_params(m.insts.data(), m.insts.size()) == ModelStatus::BadMagic);
  auto bad = m.weights;
  bad[200] ^= 1;
  CHECK(s.load_params(bad.data(), bad.size()) == ModelStatus::BadChecksum);
  CHECK(s.load_params(m.weights.data(), 60) == ModelStatus::Truncated);
  CHECK(s.status() == ModelStatus::Truncated);
  // nothing was copied by a refused file: the weight region is as the driver gave it
  for (u64 i = 0; i < 0x200; ++i) REQUIRE(fake.memory[i] == 0xCD);
  REQUIRE(s.load_params(m.weights.data(), m.weights.size()) == ModelStatus::Ok);
  CHECK(std::memcmp(fake.memory.data(), m.weights.data() + rt::kFileHeaderBytes, 0x200) == 0);
  CHECK(fake.memory[0x200] == 0xCD);  // and nothing past it
  // the insts file: checked the same way when placing from it
  CHECK(s.place(m.streams.data(), m.streams.size(), m.weights.data(), m.weights.size()) ==
        ModelStatus::BadMagic);
  // the insts file of the same model planned elsewhere: same size, other words
  const Model moved = make_model(fake.phys + 0x1000);
  REQUIRE(moved.insts.size() == m.insts.size());
  CHECK(s.place(m.streams.data(), m.streams.size(), moved.insts.data(), moved.insts.size()) ==
        ModelStatus::WrongModel);
  auto cut = m.insts;
  cut.pop_back();
  CHECK(s.place(m.streams.data(), m.streams.size(), cut.data(), cut.size()) ==
        ModelStatus::Truncated);
  CHECK_FALSE(s.ready());
  REQUIRE(s.place(m.streams.data(), m.streams.size(), m.insts.data(), m.insts.size()) ==
          ModelStatus::Ok);
  CHECK(s.ready());
}

// ---- placement and relocation -------------------------------------------------------------

// The memory after open, load_params and place (from the words or the file) with the block
// at `phys` and the plan at `base`.
std::vector<std::uint8_t> placed(u64 base, u64 phys, bool from_file,
                                 ModelStatus want = ModelStatus::Ok) {
  fake = Fake{};
  fake.phys = phys;
  const Model m = make_model(base);
  rt::Session<FakeApi> s;
  REQUIRE(s.open(m.info) == ModelStatus::Ok);
  REQUIRE(s.load_params(m.weights.data(), m.weights.size()) == ModelStatus::Ok);
  const auto st = from_file
                      ? s.place(m.streams.data(), m.streams.size(), m.insts.data(), m.insts.size())
                      : s.place(m.streams.data(), m.streams.size());
  CHECK(st == want);
  CHECK(s.ready() == (want == ModelStatus::Ok));
  return fake.memory;
}

TEST_CASE("runtime session: placing from the words or from the insts file: the same memory") {
  const u64 base = 0x100000;
  for (u64 phys : {base, base + 0x10000, base - 0x40000, u64{0x10000}}) {
    CAPTURE(phys);
    const auto words = placed(base, phys, false), file = placed(base, phys, true);
    CHECK(words == file);
    // and the streams are where the plan put them: the micro-ops as they are
    const Model m = make_model(base);
    CHECK(std::memcmp(words.data() + kUops0, m.uops[0].data(), m.uops[0].size() * 4) == 0);
  }
}

TEST_CASE("runtime session: every DRAM address moves by the block's distance, either way") {
  const vta::Config config;
  const auto layout = config.layout();
  const u64 base = 0x100000;
  for (std::int64_t delta : {std::int64_t{0}, std::int64_t{0x10000}, std::int64_t{-0x40000},
                             std::int64_t{0x7F00}, std::int64_t{-0xFF00}}) {
    CAPTURE(delta);
    const u64 phys = static_cast<u64>(static_cast<std::int64_t>(base) + delta);
    for (bool from_file : {false, true}) {
      const auto mem = placed(base, phys, from_file);
      const Model m = make_model(base);
      for (std::size_t k = 0; k < m.words.size(); ++k) {
        const u64 at = (k == 0 ? kInsts0 : kInsts1);
        for (std::size_t i = 0; i < m.words[k].size(); ++i) {
          CAPTURE(i);
          rt::InsnWord w;
          std::memcpy(&w, mem.data() + at + 16 * i, 16);
          const auto got = vta::decode(layout, w);
          auto want = vta::decode(layout, m.words[k][i]);
          const bool moves =
              (want.opcode == rt::Opcode::Load || want.opcode == rt::Opcode::Store) &&
              want.x_size > 0;
          if (moves)  // the plan's element address + the distance in elements of its memory
            want.dram_base = static_cast<std::uint32_t>(
                static_cast<std::int64_t>(want.dram_base) +
                delta / static_cast<std::int64_t>(config.elem_bytes(want.memory_type)));
          CHECK(got == want);
        }
      }
    }
  }
}

TEST_CASE("runtime session: an address that leaves its field is refused (AddressRange)") {
  const u64 base = 0x100000;
  Model m = make_model(base);
  const auto layout = vta::Config{}.layout();
  // a stream of one LOAD INP: its element address near the top of the 32-bit field, or 0
  // (below the plan: an address the block's distance cannot subtract from)
  const auto one_load = [&](std::uint32_t dram) {
    rt::InsnFields f;
    f.opcode = rt::Opcode::Load;
    f.memory_type = rt::MemId::Inp;
    f.dram_base = dram;
    f.y_size = 1;
    f.x_size = 1;
    f.x_stride = 1;
    return vta::encode(layout, f);
  };
  const std::uint32_t reloc0[] = {0};
  for (const auto& where : {std::pair<u64, std::uint32_t>{base + 0x1000, 0xFFFFFF80u},
                            std::pair<u64, std::uint32_t>{base - 0x1000, 0x80u}}) {
    const u64 phys = where.first;  // not a structured binding: CAPTURE's lambda names it
    const std::uint32_t dram = where.second;
    CAPTURE(phys);
    const rt::InsnWord word = one_load(dram);
    rt::StaticStream st;
    st.insns = &word;
    st.insn_count = 1;
    st.insn_addr = base + kInsts0;
    st.uop_addr = base + kUops0;
    st.relocs = reloc0;
    st.reloc_count = 1;
    fake = Fake{};
    fake.phys = phys;
    rt::Session<FakeApi> s;
    REQUIRE(s.open(m.info) == ModelStatus::Ok);
    REQUIRE(s.load_params(m.weights.data(), m.weights.size()) == ModelStatus::Ok);
    // 0x1000 bytes are 0x100 INP elements: 0xFFFFFF80 + 0x100 and 0x80 - 0x100 do not fit
    CHECK(s.place(&st, 1) == ModelStatus::AddressRange);
    CHECK(s.status() == ModelStatus::AddressRange);
    CHECK_FALSE(s.ready());
    CHECK(s.run(st) == ModelStatus::NotLoaded);
    CHECK(fake.runs == 0);
    // one element less far: fits
    const rt::InsnWord ok = one_load(phys > base ? 0xFFFFFEFFu : 0x100u);
    st.insns = &ok;
    CHECK(s.place(&st, 1) == ModelStatus::Ok);
  }
  // from the file: the same refusal (a file whose stream 1 is the one load)
  {
    const rt::InsnWord word = one_load(0x80u);
    std::vector<std::uint8_t> payload;
    for (std::size_t i = 0; i < m.words[0].size(); ++i) {
      put_le(payload, m.words[0][i].word[0], 8);
      put_le(payload, m.words[0][i].word[1], 8);
    }
    for (auto u : m.uops[0]) put_le(payload, u, 4);
    put_le(payload, word.word[0], 8);
    put_le(payload, word.word[1], 8);
    const auto file =
        file_of(rt::FileKind::Insts, payload, static_cast<std::uint32_t>(m.uops[0].size()));
    rt::ModelInfo info = m.info;
    info.insts_bytes = payload.size();
    info.insts_checksum = checksum_of(file);
    rt::StaticStream streams[2] = {m.streams[0], {}};
    streams[1].insn_count = 1;
    streams[1].insn_addr = base + kInsts1;
    streams[1].uop_addr = base + kUops1;
    streams[1].relocs = reloc0;
    streams[1].reloc_count = 1;
    fake = Fake{};
    fake.phys = base - 0x1000;
    rt::Session<FakeApi> s;
    REQUIRE(s.open(info) == ModelStatus::Ok);
    CHECK(s.place(streams, 2, file.data(), file.size()) == ModelStatus::AddressRange);
    CHECK_FALSE(s.ready());
  }
  // a relocation naming a word whose memory type is not one: refused, not read out of range
  {
    rt::InsnFields f;
    f.opcode = rt::Opcode::Store;
    f.memory_type = rt::MemId::Out;
    f.x_size = 1;
    rt::InsnWord w = rt::pack(layout, f);
    rt::put_field(w, layout.pos(rt::Form::Mem, rt::Field::memory_type), 7);
    rt::StaticStream st;
    st.insns = &w;
    st.insn_count = 1;
    st.insn_addr = base + kInsts0;
    st.relocs = reloc0;
    st.reloc_count = 1;
    fake = Fake{};
    fake.phys = base + 0x1000;
    rt::Session<FakeApi> s;
    REQUIRE(s.open(m.info) == ModelStatus::Ok);
    CHECK(s.place(&st, 1) == ModelStatus::AddressRange);
  }
}

// ---- runs, replays and the log ---------------------------------------------------------------

TEST_CASE("runtime session: run passes the stream's place, flushes, and reports DeviceError") {
  fake = Fake{};
  const u64 base = 0x100000;
  fake.phys = base + 0x20000;
  const Model m = make_model(base);
  rt::Session<FakeApi> s;
  REQUIRE(s.open(m.info) == ModelStatus::Ok);
  REQUIRE(s.load_params(m.weights.data(), m.weights.size()) == ModelStatus::Ok);
  REQUIRE(s.place(m.streams.data(), m.streams.size()) == ModelStatus::Ok);
  s.wait_cycles = 1234;
  REQUIRE(s.run(m.streams[1]) == ModelStatus::Ok);
  CHECK(fake.run_insn == fake.phys + kInsts1);
  CHECK(fake.run_count == m.words[1].size());
  CHECK(fake.run_wait == 1234);
  CHECK(fake.flushed_before_run);
  CHECK(fake.flushes == 1);
  CHECK(fake.invalidates == 1);
  CHECK(fake.flush_phys == fake.phys);
  CHECK(fake.flush_bytes == static_cast<int>(kEnd));
  CHECK(fake.invalidate_phys == fake.phys);
  CHECK(fake.invalidate_bytes == static_cast<int>(kEnd));
  // what the device read is the placed stream
  CHECK(std::memcmp(fake.run_words.data(), fake.memory.data() + kInsts1, m.words[1].size() * 16) ==
        0);
  CHECK(s.phys(base + kOut) == fake.phys + kOut);
  CHECK(s.at<std::uint8_t>(base + kOut) == fake.memory.data() + kOut);
  for (int rc : {1, 2, -1}) {
    CAPTURE(rc);
    fake.run_result = rc;  // timeout or failure
    CHECK(s.run(m.streams[0]) == ModelStatus::DeviceError);
    CHECK(s.status() == ModelStatus::DeviceError);
  }
  CHECK(fake.invalidates == 4);  // the CPU's view is refreshed even after a failed run
  fake.run_result = 0;
  CHECK(s.run(m.streams[0]) == ModelStatus::Ok);
  CHECK(s.ready());  // a failed run leaves the session usable
}

// The vector add as a replay: n elements of a and b, added, stored.
struct VaddReplay {
  template <class R>
  bool operator()(R& r, const std::int64_t* dims) const {
    const std::int64_t n = dims[0];
    if (!r.load(rt::MemId::Acc, 0, 0, 0, 0, 1, n, rt::kDenseStride, 0, 0, 0, 0) ||
        !r.load(rt::MemId::Acc, 1, 4, 1, 0, 1, n, rt::kDenseStride, 0, 0, 0, 0))
      return false;
    r.kernel_begin();
    r.loop_begin(n, 1, 1, 0);
    r.push(0, 4, 0);
    return r.alu(rt::AluOp::Add, false, 0, 0, 1) && r.store(0, 0, 2, 0, 1, n, rt::kDenseStride);
  }
};

struct ReplayRig {
  explicit ReplayRig(u64 base, std::uint64_t capacity = 64)
      : params{base + kA, base + kB, base + kOut} {
    slots.insn_addr = base + kReplayInsts;
    slots.insn_capacity = capacity;
    slots.uop_addr = base + kReplayUops;
    slots.uop_capacity = 64;
    slots.relocs = relocs;
    slots.kernels = {kernels, resident, kernel_index, 8, 8};
    slots.ops = ops;
    slots.op_capacity = 16;
    slots.states = states;
  }
  template <class Api, class Fn = VaddReplay>
  ModelStatus run(rt::Session<Api>& s, std::int64_t n, Fn fn = {}) {
    const std::int64_t dims[] = {n};
    return s.replay(rt::DynamicLayout(rt::IsaLayout::default_layout()), fn, regions, 2, params,
                    phys, 3, dims, slots);
  }
  const rt::SramRegion regions[2] = {{rt::MemId::Acc, 0, 4}, {rt::MemId::Acc, 4, 8}};
  u64 params[3];
  u64 phys[3] = {};
  std::uint32_t relocs[64] = {};
  rt::KernelSlot kernels[8] = {}, resident[8] = {};
  std::uint32_t kernel_index[rt::KernelTables::index_size(8, 8)] = {};
  rt::UopOp ops[16] = {};
  rt::RegionState states[2] = {};
  rt::ReplaySlots slots;
};

TEST_CASE("runtime session: replay writes its stream into its slots and relocates its uop loads") {
  fake = Fake{};
  const u64 base = 0x100000;
  fake.phys = base - 0x8000;
  const Model m = make_model(base);
  rt::Session<FakeApi> s;
  ReplayRig rig(base);
  CHECK(rig.run(s, 4) == ModelStatus::NotLoaded);
  REQUIRE(s.open(m.info) == ModelStatus::Ok);
  CHECK(rig.run(s, 4) == ModelStatus::NotLoaded);
  REQUIRE(s.load_params(m.weights.data(), m.weights.size()) == ModelStatus::Ok);
  REQUIRE(s.place(m.streams.data(), m.streams.size()) == ModelStatus::Ok);
  REQUIRE(rig.run(s, 3) == ModelStatus::Ok);
  // the parameters' physical addresses, handed to the replay
  CHECK(rig.phys[0] == fake.phys + kA);
  CHECK(rig.phys[2] == fake.phys + kOut);
  CHECK(fake.run_insn == fake.phys + kReplayInsts);
  const auto layout = vta::Config{}.layout();
  std::vector<rt::InsnFields> f;
  for (const auto& w : fake.run_words) f.push_back(vta::decode(layout, w));
  REQUIRE(f.size() >= 5);
  CHECK(f[0].dram_base == (fake.phys + kA) / 64);
  CHECK(f[1].dram_base == (fake.phys + kB) / 64);
  CHECK(f[1].x_size == 3);
  // the LOAD UOP: the micro-op slot's physical address in words, plus the kernel's offset 0
  CHECK(f[2].memory_type == rt::MemId::Uop);
  CHECK(f[2].dram_base == (fake.phys + kReplayUops) / 4);
  CHECK(f[3].opcode == rt::Opcode::Alu);
  CHECK(f[3].iter_out == 3);
  CHECK(f.back().opcode == rt::Opcode::Finish);
  std::size_t store = 0;
  while (f[store].opcode != rt::Opcode::Store) ++store;
  CHECK(f[store].dram_base == (fake.phys + kOut) / 16);
  // the micro-op in its slot: dst 0, src 4
  std::uint32_t uop = 0;
  std::memcpy(&uop, fake.memory.data() + kReplayUops, 4);
  CHECK(rt::unpack_uop(layout, uop) == rt::Uop{0, 4, 0});
  // a stream that does not fit its slot: StreamError, the writer's status kept
  ReplayRig tiny(base, 3);
  CHECK(tiny.run(s, 4) == ModelStatus::StreamError);
  CHECK(s.writer_error().status == rt::Status::InsnsFull);
  // a replay that fails on its own: a parameter not aligned to its (64-byte) element
  ReplayRig odd(base);
  odd.params[0] = base + kA + 8;
  const int runs = fake.runs;
  CHECK(odd.run(s, 4) == ModelStatus::StreamError);
  CHECK(s.writer_error().status == rt::Status::Misaligned);
  CHECK(s.writer_error().value == static_cast<std::int64_t>(fake.phys + kA + 8));
  CHECK(fake.runs == runs);  // nothing ran
}

TEST_CASE("runtime session: the log has a line per transfer of each stream run") {
  fake = Fake{};
  const u64 base = 0x100000;
  fake.phys = base + 0x10000;
  const Model m = make_model(base);
  rt::Session<FakeApi> s;
  std::vector<std::string> lines;
  REQUIRE(s.open(m.info) == ModelStatus::Ok);
  REQUIRE(s.load_params(m.weights.data(), m.weights.size()) == ModelStatus::Ok);
  REQUIRE(s.place(m.streams.data(), m.streams.size()) == ModelStatus::Ok);
  s.log("before any log function: dropped");
  s.set_log([](const char* line,
               void* ctx) { static_cast<std::vector<std::string>*>(ctx)->push_back(line); },
            &lines);
  s.log("step 0: vadd");
  REQUIRE(s.run<true>(m.streams[0]) == ModelStatus::Ok);
  // stream 0 as built: #0 LOAD ACC a, #1 LOAD ACC b, #2 LOAD UOP (the ALU's one micro-op),
  // #3 ALU, #4 STORE; then FINISH's no-op transfers (x_size 0: no line). Byte addresses are
  // the block's: a at +0, b at +0x100, the micro-ops at +0x1000, out at +0x200.
  const auto hex = [](u64 v) {
    char b[32];
    std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
    return std::string(b);
  };
  const u64 p = fake.phys;
  const std::vector<std::string> want = {
      "step 0: vadd", "  #0 LOAD ACC sram 0 dram " + hex(p + kA) + " rows 1 x 4 stride 4",
      "  #1 LOAD ACC sram 4 dram " + hex(p + kB) + " rows 1 x 4 stride 4",
      "  #2 LOAD UOP sram 0 dram " + hex(p + kUops0) + " rows 1 x 1 stride 1",
      "  #4 STORE OUT sram 0 dram " + hex(p + kOut) + " rows 1 x 4 stride 4"};
  CHECK(lines == want);
  // a run without LogTransfers (a header emitted without debug) logs nothing
  lines.clear();
  REQUIRE(s.run(m.streams[0]) == ModelStatus::Ok);
  CHECK(lines.empty());
  s.set_log(nullptr, nullptr);
  REQUIRE(s.run<true>(m.streams[0]) == ModelStatus::Ok);
  s.log("dropped");
  CHECK(lines.empty());
}

// ---- on the simulator ---------------------------------------------------------------------

TEST_CASE("runtime session: on the simulator, the outputs are a + b with the block anywhere") {
  Board b;
  board = &b;
  // the simulator hands out 0x10000 first: a plan at 0 puts the block above it, a plan at
  // 0x40000000 below it
  for (u64 base : {u64{0}, u64{0x40000000}, u64{0x10000}}) {
    CAPTURE(base);
    const Model m = make_model(base, base + 7);
    for (bool from_file : {false, true}) {
      CAPTURE(from_file);
      rt::Session<SimApi> s;
      REQUIRE(s.open(m.info) == ModelStatus::Ok);
      CHECK(s.phys(base) == 0x10000);
      REQUIRE(s.load_params(m.weights.data(), m.weights.size()) == ModelStatus::Ok);
      REQUIRE((from_file
                   ? s.place(m.streams.data(), m.streams.size(), m.insts.data(), m.insts.size())
                   : s.place(m.streams.data(), m.streams.size())) == ModelStatus::Ok);
      std::memset(s.at<std::uint8_t>(base + kOut), 0, 0x80);
      REQUIRE(s.run(m.streams[0]) == ModelStatus::Ok);
      CHECK(bytes_at(s, base + kOut, 64) == m.expected_out());
      REQUIRE(s.run(m.streams[1]) == ModelStatus::Ok);
      CHECK(bytes_at(s, base + kOut2, 64) == m.expected_out2());
      // the replay of the same add, for 1..4 elements
      ReplayRig rig(base);
      for (std::int64_t n = 1; n <= 4; ++n) {
        CAPTURE(n);
        std::memset(s.at<std::uint8_t>(base + kOut), 0, 64);
        REQUIRE(rig.run(s, n) == ModelStatus::Ok);
        const auto want = m.expected_out();
        auto got = bytes_at(s, base + kOut, 64);
        CHECK(std::vector<std::int8_t>(got.begin(), got.begin() + 16 * n) ==
              std::vector<std::int8_t>(want.begin(), want.begin() + 16 * n));
        CHECK(std::all_of(got.begin() + 16 * n, got.end(), [](std::int8_t v) { return v == 0; }));
      }
    }
    CHECK(b.devices == 0);
    CHECK(b.sim.dram().allocation_count() == 0);
  }
  {  // a device failure on the board: a stream cut before its FINISH does not finish
    const Model m = make_model(0);
    rt::Session<SimApi> s;
    REQUIRE(s.open(m.info) == ModelStatus::Ok);
    REQUIRE(s.load_params(m.weights.data(), m.weights.size()) == ModelStatus::Ok);
    REQUIRE(s.place(m.streams.data(), m.streams.size()) == ModelStatus::Ok);
    rt::StaticStream cut = m.streams[1];
    cut.insn_count -= 1;
    CHECK(s.run(cut) == ModelStatus::DeviceError);
  }
  board = nullptr;
}

}  // namespace runtime_session_test

// Compiled with -fno-exceptions -fno-rtti: the runtime layer must build as firmware does. Its
// templates are instantiated here as firmware instantiates them (a writer over fixed storage, a
// replay, a Session over a driver of static functions, the kernels), so that their bodies are
// compiled under these flags too; tests/runtime checks what they compute.
#include <dlavm/runtime.hpp>

#include <cstdio>
#include <cstring>

namespace rt = dlavm::runtime;

constexpr rt::IsaLayout kLayout = rt::IsaLayout::default_layout();
static_assert(kLayout.ok && kLayout.uop_ok);
static_assert(kLayout.pos(rt::Form::Mem, rt::Field::y_size) == rt::FieldPos{64, 16});
static_assert(kLayout.pos(rt::Form::Alu, rt::Field::imm) == rt::FieldPos{112, 16});

namespace {

// A driver of static functions over one static block, as a board support package has.
alignas(64) unsigned char g_block[4096];
int g_device;
struct StaticApi {
  static VTADeviceHandle device_alloc() { return &g_device; }
  static void device_free(VTADeviceHandle) {}
  static int device_run(VTADeviceHandle, vta_phy_addr_t, std::uint32_t, std::uint32_t) { return 0; }
  static void* mem_alloc(std::size_t size, int) {
    return size <= sizeof g_block ? g_block : nullptr;
  }
  static void mem_free(void*) {}
  static vta_phy_addr_t phy_addr(void*) { return 0x10000; }
  static void copy_from_host(void* d, const void* s, std::size_t n) { std::memcpy(d, s, n); }
  static void copy_to_host(void* d, const void* s, std::size_t n) { std::memcpy(d, s, n); }
  static void flush(void*, vta_phy_addr_t, int) {}
  static void invalidate(void*, vta_phy_addr_t, int) {}
};

// A stream written by a replay into fixed storage: false if anything fails.
bool replay_writes() {
  rt::FixedStorage<32, 32, 4> st;
  rt::StreamWriter<rt::FixedStorage<32, 32, 4>> w(kLayout, 8192, st);
  const rt::SramRegion regions[] = {{rt::MemId::Acc, 0, 4}, {rt::MemId::Acc, 4, 8}};
  rt::RegionState states[2];
  rt::UopOp ops[4];
  const std::uint64_t phys[] = {0x10000, 0x10100, 0x10200};
  rt::Replay<rt::FixedStorage<32, 32, 4>> r(w, 8192, {{4, 256, 16, 64, 16, 16}}, regions, states, 2,
                                            phys, {ops, 4});
  r.kernel_begin();
  r.loop_begin(4, 1, 1, 0);
  r.push(0, 4, 0);
  return r.load(rt::MemId::Acc, 0, 0, 0, 0, 1, 4, rt::kDenseStride, 0, 0, 0, 0) &&
         r.load(rt::MemId::Acc, 1, 4, 1, 0, 1, 4, rt::kDenseStride, 0, 0, 0, 0) &&
         r.alu(rt::AluOp::Add, false, 0, 0, 1) && r.store(0, 0, 2, 0, 1, 4, rt::kDenseStride) &&
         w.finish() && st.insn_count() > 5;
}

// A session's calls, over StaticApi: open, and the refusals of a file that is not one.
bool session_runs() {
  rt::ModelInfo info;
  info.base = 0x10000;
  info.end = 0x11000;
  rt::Session<StaticApi> s;
  if (s.open(info) != rt::ModelStatus::Ok) return false;
  const std::uint8_t junk[100] = {};
  if (s.load_params(junk, sizeof junk) != rt::ModelStatus::BadMagic) return false;
  rt::StaticStream none{};  // an empty stream, its slots in the block
  none.insn_addr = none.uop_addr = 0x10000;
  if (s.run(none) != rt::ModelStatus::NotLoaded) return false;
  if (s.place(&none, 1) != rt::ModelStatus::Ok) return false;
  return s.place(&none, 1, junk, sizeof junk) == rt::ModelStatus::BadMagic;
}

// The kernels firmware calls between VTA steps.
bool kernels_run() {
  const std::int8_t x[6] = {1, 2, 3, 4, 5, 6};
  std::int8_t packed[16] = {}, back[6] = {};
  rt::pack_tiled(x, packed, 1, 6, 1, 1, 1, 16);
  rt::unpack_tiled(packed, back, 1, 6, 1, 1, 1, 16);
  float f[3] = {0, 1, 2}, y[3];
  rt::softmax(f, y, 1, 3, 1);
  std::int8_t p[6];
  rt::integer_softmax(x, p, 1, 6, 1, rt::IntegerExp{});
  std::int32_t acc[1];
  rt::dense(x, x, acc, 1, 1, 6);
  // data movement: a reversed slice, a tile, a gather with a clamped index, a resize
  const std::int64_t shape[] = {2, 3}, start[] = {1, 0}, step[] = {-1, 1}, tiled[] = {4, 3};
  std::int8_t s[6], t[12], g[2], r[6];
  rt::strided_slice(x, s, shape, start, step, shape, 2);
  rt::tile(x, t, shape, tiled, 2);
  const std::int32_t at[] = {-1, 9};
  const bool clamped = rt::take(x, at, g, 1, 6, 1, 2) == 1;
  rt::resize2d_nearest(x, r, {1, 2, 3, 2, 3, 1.0f, 1.0f, 0, 0});
  float up[12];
  rt::resize2d_linear(f, up, {1, 1, 3, 2, 6, 2.0f, 2.0f, 0, 0});
  const bool moved =
      s[0] == 4 && t[11] == 6 && clamped && g[0] == 6 && g[1] == 6 && r[5] == 6 && up[0] == 0.0f;
  // the math kernels: a unary, binary and reduction kind each, broadcast and log_softmax
  float sg[3], l[3], m = 0;
  rt::unary<rt::Unary::Sigmoid>(f, sg, 3);
  rt::log_softmax(f, l, 1, 3, 1);
  const std::int64_t row[] = {1, 3}, col[] = {2, 1};
  const bool all[] = {true, true};
  std::int8_t q[6], sum = 0;
  rt::binary_broadcast<rt::Binary::Div>(x, x + 4, q, shape, row, col, 2);  // x[:3] / [5, 6]
  rt::reduce<rt::Reduce::Sum>(x, &sum, shape, all, 2);
  rt::reduce<rt::Reduce::Maximum>(sg, &m, row + 1, all, 1);
  // the booleans: a comparison, a logical kind and where, each of one shape and broadcast; a
  // float class; an arg reduction
  std::uint8_t ge[6], lt[6], both[6], none[6], inf[3];
  rt::compare<rt::Compare::GreaterEqual>(x, s, ge, 6);  // x >= x reversed by rows
  rt::compare_broadcast<rt::Compare::Less>(x, x + 1, lt, shape, row, col, 2);  // x[:3] < [2, 3]
  rt::logical<rt::Logical::And>(ge, lt, both, 6);
  rt::logical_broadcast<rt::Logical::Or>(ge, lt, both, shape, row, col, 2);
  rt::logical<rt::Logical::Not>(ge, none, 6);
  std::int8_t w[6], wb[6];
  rt::where(ge, x, s, w, 6);
  rt::where_broadcast(lt, x, x + 4, wb, shape, shape, row, col, 2);
  const float odd[] = {1.0f, HUGE_VALF, -HUGE_VALF};
  rt::float_class<rt::FloatClass::Inf>(odd, inf, 3, true, false);
  std::int64_t at_max[2];
  rt::arg_reduce<rt::ArgReduce::Max>(x, at_max, 2, 3, 1, false);  // x as [2, 3]
  const bool logic = ge[0] == 0 && ge[3] == 1 && lt[0] == 1 && lt[5] == 0 && none[0] == 1 &&
                     w[0] == 4 && wb[0] == 1 && wb[5] == 6 && inf[1] == 1 && inf[2] == 0 &&
                     at_max[0] == 2 && at_max[1] == 2;
  return std::memcmp(x, back, 6) == 0 && y[2] > y[1] && acc[0] == 91 && p[5] > p[0] && moved &&
         sg[0] == 0.5f && l[2] > l[0] && q[2] == 0 && q[5] == 0 && sum == 21 && m == sg[2] && logic;
}

}  // namespace

int main() {
  rt::InsnFields f;
  f.opcode = rt::Opcode::Load;
  f.memory_type = rt::MemId::Uop;
  f.x_size = 4;
  f.dram_base = 2;
  rt::InsnWord w = rt::pack(kLayout, f);
  const auto dram = kLayout.pos(rt::Form::Mem, rt::Field::dram_base);
  if (!rt::add_to_field(w, dram, 0x100)) return 1;  // a relocation, as Session::place does
  const auto back = rt::unpack(kLayout, w);
  if (back.dram_base != 0x102 || back.x_size != 4) return 1;
  if (rt::add_to_field(w, dram, -0x103)) return 1;  // below zero: refused, the word kept
  if (rt::unpack(kLayout, w).dram_base != 0x102) return 1;
  if (!replay_writes() || !session_runs() || !kernels_run()) return 1;
  std::puts("PASS runtime builds without exceptions or RTTI");
  return 0;
}

// A model's session in firmware: the memory of its plan (one block from the VTA driver, the
// plan's regions at their offsets), its weights and static streams loaded and checked, and
// the steps the generated code runs: static streams placed once, symbolic streams replayed
// into the insts and uop regions for the dims of a run, both run through VTADeviceRun; host
// steps run between them on the block's memory (runtime/kernels.hpp). The generated header
// (deploy::emit) drives it:
//
//   mlp::Session s;                                     // dlavm::runtime::Session<Api>
//   if (s.open(mlp::kInfo) != Ok || mlp::load_params(s, weights, n) != Ok ||
//       mlp::prepare(s) != Ok) ...
//   std::memcpy(mlp::input_x(s), x, 37 * 64);
//   mlp::run(s, 37);                                    // batch = 37
//
// The plan's addresses are absolute (the region map's bases); the block the driver returns
// may sit elsewhere, so every static stream's DRAM fields are moved by the difference when it
// is placed (`relocs`: the instructions that carry an address). Standard library only, no
// exceptions, no heap, C++17.
#pragma once

#include <dlavm/runtime/driver_api.hpp>
#include <dlavm/runtime/model_file.hpp>
#include <dlavm/runtime/replay.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>

namespace dlavm::runtime {

struct RegionSpan {
  std::uint64_t base = 0, bytes = 0;
};

// What the generated header says of a model.
struct ModelInfo {
  const char* name = "";
  ConfigId config;
  std::uint64_t base = 0, end = 0;  // the plan's addresses [base, end)
  RegionSpan weight, runtime, cache, insts, uop;
  std::uint64_t alignment = 256;
  // each file's payload bytes and its checksum (model_file.hpp: header and payload)
  std::uint64_t weights_bytes = 0, weights_checksum = 0;
  std::uint64_t insts_bytes = 0, insts_checksum = 0;
};

// A stream whose words the generator wrote (all dims static): planned addresses, placed at
// its slots in the insts and uop regions; `relocs` lists the instructions with DRAM addresses.
struct StaticStream {
  const InsnWord* insns = nullptr;
  std::uint32_t insn_count = 0;
  const std::uint32_t* uops = nullptr;
  std::uint32_t uop_count = 0;
  std::uint64_t insn_addr = 0, uop_addr = 0;
  const std::uint32_t* relocs = nullptr;
  std::uint32_t reloc_count = 0;
};

// Where a replayed stream goes and what it needs: its slots and the caller's work arrays.
struct ReplaySlots {
  std::uint64_t insn_addr = 0, insn_capacity = 0;
  std::uint64_t uop_addr = 0, uop_capacity = 0;
  std::uint32_t* relocs = nullptr;
  KernelTables kernels{};
  UopOp* ops = nullptr;
  std::size_t op_capacity = 0;
  RegionState* states = nullptr;
};

template <class Api = VtaDriverApi>
class Session {
 public:
  Session() = default;
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  ~Session() { close(); }

  // Allocates the plan's memory (one block) and the device.
  ModelStatus open(const ModelInfo& info) {
    close();
    info_ = &info;
    // the block's bytes, as the allocator's size_t and the driver's int cache calls take them
    // (run_at): a plan larger than an int is NoMemory, not a smaller block or a negative span
    const std::uint64_t span = info.end - info.base;
    if (info.end < info.base || span > std::uint64_t{std::numeric_limits<int>::max()})
      return fail(ModelStatus::NoMemory);
    const auto bytes = static_cast<std::size_t>(span);
    block_ = Api::mem_alloc(bytes == 0 ? 1 : bytes, 1);
    if (block_ == nullptr) return fail(ModelStatus::NoMemory);
    phys_ = Api::phy_addr(block_);
    // every planned offset keeps its alignment only if the block keeps the plan's (a plan of
    // alignment 0 keeps none)
    if (info.alignment == 0 || (phys_ - info.base) % info.alignment != 0)
      return fail(ModelStatus::Misaligned);
    device_ = Api::device_alloc();
    if (device_ == nullptr) return fail(ModelStatus::NoMemory);
    return ModelStatus::Ok;
  }
  void close() {
    if (device_ != nullptr) Api::device_free(device_);
    if (block_ != nullptr) Api::mem_free(block_);
    device_ = nullptr;
    block_ = nullptr;
    weights_ = streams_ = false;
  }
  bool is_open() const { return block_ != nullptr && device_ != nullptr; }
  // Open, its weights loaded and its static streams placed: runs may start.
  bool ready() const { return is_open() && weights_ && streams_; }
  const ModelInfo& info() const { return *info_; }

  // The bytes at planned address `addr` (the CPU's view) and its physical address.
  template <class T>
  T* at(std::uint64_t addr) {
    return reinterpret_cast<T*>(static_cast<std::uint8_t*>(block_) + (addr - info_->base));
  }
  std::uint64_t phys(std::uint64_t addr) const { return phys_ + (addr - info_->base); }

  // The weights file: checked (kind, version, configuration, header, size, checksum; this
  // model's: its name, size and checksum) and copied to the weight region.
  ModelStatus load_params(const std::uint8_t* file, std::size_t size) {
    if (!is_open()) return fail(ModelStatus::NotOpen);
    FileHeader h;
    const ModelStatus st = check_model_file(file, size, FileKind::Weights, info_->config, h);
    if (st != ModelStatus::Ok) return fail(st);
    if (!this_model(h) || h.payload_bytes != info_->weights_bytes ||
        h.checksum != info_->weights_checksum)
      return fail(ModelStatus::WrongModel);
    copy_in(info_->weight.base, file + kFileHeaderBytes, static_cast<std::size_t>(h.payload_bytes));
    weights_ = true;
    return ModelStatus::Ok;
  }

  // Places the static streams, from the header's words.
  ModelStatus place(const StaticStream* streams, std::size_t n) {
    if (!is_open()) return fail(ModelStatus::NotOpen);
    for (std::size_t k = 0; k < n; ++k)
      if (const ModelStatus st = place_one(streams[k], streams[k].insns, nullptr);
          st != ModelStatus::Ok)
        return fail(st);
    streams_ = true;
    return ModelStatus::Ok;
  }
  // ... or from the insts file (checked as the weights are): the same words, for firmware that
  // keeps them out of its image. `streams` gives their slots and relocations.
  ModelStatus place(const StaticStream* streams, std::size_t n, const std::uint8_t* file,
                    std::size_t size) {
    if (!is_open()) return fail(ModelStatus::NotOpen);
    FileHeader h;
    const ModelStatus st = check_model_file(file, size, FileKind::Insts, info_->config, h);
    if (st != ModelStatus::Ok) return fail(st);
    if (!this_model(h) || h.payload_bytes != info_->insts_bytes ||
        h.checksum != info_->insts_checksum)
      return fail(ModelStatus::WrongModel);
    const std::uint8_t* p = file + kFileHeaderBytes;
    for (std::size_t k = 0; k < n; ++k) {
      if (const ModelStatus st = place_one(streams[k], nullptr, p); st != ModelStatus::Ok)
        return fail(st);
      p += streams[k].insn_count * sizeof(InsnWord) + streams[k].uop_count * 4;
    }
    streams_ = true;
    return ModelStatus::Ok;
  }

  // Runs a placed static stream. `LogTransfers`: each of its transfers logged first (a header
  // emitted with `debug`); only then is the formatting (snprintf) part of the program.
  template <bool LogTransfers = false>
  ModelStatus run(const StaticStream& s) {
    if (!weights_ || !streams_) return fail(ModelStatus::NotLoaded);
    if constexpr (LogTransfers) log_stream(at<InsnWord>(s.insn_addr), s.insn_count);
    return run_at(s.insn_addr, s.insn_count);
  }

  // Replays a symbolic program for `dims` into its slots and runs it. `replay` is the
  // generated function; `params` the planned addresses of its parameters; `layout` the
  // writer's (StaticLayout<kLayout> in the generated code: the same as set_target's, folded
  // into the code). `LogTransfers` as for run.
  template <bool LogTransfers = false, class Layout, class Fn>
  ModelStatus replay(Layout layout, Fn replay, const SramRegion* regions, std::size_t region_count,
                     const std::uint64_t* params, std::uint64_t* params_phys,
                     std::size_t param_count, const std::int64_t* dims, const ReplaySlots& slots) {
    if (!weights_ || !streams_) return fail(ModelStatus::NotLoaded);
    for (std::size_t k = 0; k < param_count; ++k) params_phys[k] = phys(params[k]);
    SpanStorage st(at<InsnWord>(slots.insn_addr), static_cast<std::size_t>(slots.insn_capacity),
                   at<std::uint32_t>(slots.uop_addr), static_cast<std::size_t>(slots.uop_capacity),
                   slots.relocs, slots.kernels);
    StreamWriter<SpanStorage, Layout> w(layout, uop_depth_, st);
    Replay<SpanStorage, Layout> r(w, uop_depth_, elem_, regions, slots.states, region_count,
                                  params_phys, {slots.ops, slots.op_capacity});
    if (!replay(r, dims) || !w.finish()) {
      writer_error_ = w.error();
      return fail(ModelStatus::StreamError);
    }
    // the LOAD UOPs address the micro-op buffer from its start: move them to its slot
    const auto uop_base = static_cast<std::int64_t>(phys(slots.uop_addr) / 4);
    const FieldPos dram = w.layout().pos(Form::Mem, Field::dram_base);
    for (std::size_t i = 0; i < st.reloc_count(); ++i)
      if (!add_to_field(st.insn(st.relocs()[i]), dram, uop_base))
        return fail(ModelStatus::AddressRange);
    if constexpr (LogTransfers) log_stream(st.insns(), st.insn_count());
    return run_at(slots.insn_addr, static_cast<std::uint32_t>(st.insn_count()));
  }

  // The ISA facts replays and relocations need (the generated header's constants).
  void set_target(const IsaLayout& layout, std::uint32_t uop_depth, const ElemBytes& elem) {
    layout_ = layout;
    uop_depth_ = uop_depth;
    elem_ = elem;
  }

  // Debug: called with a line per step and per transfer (DMA) of each stream run, where the
  // header was emitted with `debug` (without it, nothing calls the function).
  using LogFn = void (*)(const char* line, void* context);
  void set_log(LogFn fn, void* context) {
    log_ = fn;
    log_context_ = context;
  }
  void log(const char* line) {
    if (log_ != nullptr) log_(line, log_context_);
  }

  ModelStatus status() const { return status_; }
  const WriterError& writer_error() const { return writer_error_; }
  std::uint32_t wait_cycles = 100000000;

 private:
  // the file names this model (its NUL-padded name field holds the model's name)
  bool this_model(const FileHeader& h) const {
    std::size_t n = 0;
    while (info_->name[n] != 0) ++n;
    if (n > kModelNameBytes || std::memcmp(h.name, info_->name, n) != 0) return false;
    for (std::size_t i = n; i < kModelNameBytes; ++i)
      if (h.name[i] != 0) return false;
    return true;
  }
  ModelStatus fail(ModelStatus s) {
    status_ = s;
    return s;
  }
  void copy_in(std::uint64_t addr, const void* src, std::size_t n) {
    if (n > 0) std::memcpy(at<std::uint8_t>(addr), src, n);
  }
  // Copies a static stream's words and micro-ops to its slots, its DRAM addresses moved to
  // where the driver's block is: AddressRange when a moved address leaves its field,
  // Misaligned when the block's distance from the plan is no whole number of an instruction's
  // elements (a plan aligned to less than set_target's element bytes).
  ModelStatus place_one(const StaticStream& s, const InsnWord* words, const std::uint8_t* bytes) {
    InsnWord* dst = at<InsnWord>(s.insn_addr);
    for (std::uint32_t i = 0; i < s.insn_count; ++i) {
      if (words != nullptr) {
        dst[i] = words[i];
      } else {
        for (int h = 0; h < 2; ++h) {
          std::uint64_t v = 0;
          for (int b = 0; b < 8; ++b) v |= std::uint64_t{bytes[i * 16 + h * 8 + b]} << (8 * b);
          dst[i].word[h] = v;
        }
      }
    }
    std::uint32_t* uops = at<std::uint32_t>(s.uop_addr);
    const std::uint8_t* ub = bytes != nullptr ? bytes + s.insn_count * 16 : nullptr;
    for (std::uint32_t i = 0; i < s.uop_count; ++i)
      uops[i] = ub != nullptr ? static_cast<std::uint32_t>(ub[4 * i]) |
                                    static_cast<std::uint32_t>(ub[4 * i + 1]) << 8 |
                                    static_cast<std::uint32_t>(ub[4 * i + 2]) << 16 |
                                    static_cast<std::uint32_t>(ub[4 * i + 3]) << 24
                              : s.uops[i];
    // the block sits `delta` bytes from the plan (either way): move every DRAM address by it,
    // in elements of the instruction's memory (open checked the block keeps the alignment)
    const auto delta = static_cast<std::int64_t>(phys_ - info_->base);
    if (delta == 0) return ModelStatus::Ok;
    const FieldPos dram = layout_.pos(Form::Mem, Field::dram_base);
    const FieldPos mem = layout_.pos(Form::Mem, Field::memory_type);
    for (std::uint32_t i = 0; i < s.reloc_count; ++i) {
      InsnWord& word = dst[s.relocs[i]];
      const std::uint64_t m = get_field(word, mem);
      if (m >= static_cast<std::uint64_t>(kMemIdCount)) return ModelStatus::AddressRange;
      const auto elem = static_cast<std::int64_t>(elem_.of[m]);
      if (elem <= 0 || delta % elem != 0) return ModelStatus::Misaligned;
      if (!add_to_field(word, dram, delta / elem)) return ModelStatus::AddressRange;
    }
    return ModelStatus::Ok;
  }
  ModelStatus run_at(std::uint64_t insn_addr, std::uint32_t count) {
    // the CPU wrote the streams and the host steps' values: VTA must see them, and the CPU
    // what VTA stores
    const std::uint64_t span = info_->end - info_->base;
    Api::flush(block_, static_cast<vta_phy_addr_t>(phys_), static_cast<int>(span));
    const int rc =
        Api::device_run(device_, static_cast<vta_phy_addr_t>(phys(insn_addr)), count, wait_cycles);
    Api::invalidate(block_, static_cast<vta_phy_addr_t>(phys_), static_cast<int>(span));
    return rc == 0 ? ModelStatus::Ok : fail(ModelStatus::DeviceError);
  }
  void log_stream(const InsnWord* words, std::size_t n) {
    if (log_ == nullptr) return;
    char line[160];
    for (std::size_t i = 0; i < n; ++i) {
      const InsnFields f = unpack(layout_, words[i]);
      if ((f.opcode != Opcode::Load && f.opcode != Opcode::Store) || f.x_size == 0) continue;
      std::snprintf(
          line, sizeof line, "  #%zu %s %s sram %llu dram 0x%llx rows %llu x %llu stride %llu", i,
          opcode_name(f.opcode), mem_name(f.memory_type),
          static_cast<unsigned long long>(f.sram_base),
          static_cast<unsigned long long>(
              f.dram_base *
              (f.memory_type == MemId::Uop ? 4 : elem_.of[static_cast<int>(f.memory_type)])),
          static_cast<unsigned long long>(f.y_size), static_cast<unsigned long long>(f.x_size),
          static_cast<unsigned long long>(f.x_stride));
      log(line);
    }
  }

  const ModelInfo* info_ = nullptr;
  void* block_ = nullptr;
  std::uint64_t phys_ = 0;
  VTADeviceHandle device_ = nullptr;
  bool weights_ = false, streams_ = false;
  IsaLayout layout_ = IsaLayout::default_layout();
  std::uint32_t uop_depth_ = 8192;
  ElemBytes elem_ = {{4, 256, 16, 64, 16, 16}};
  ModelStatus status_ = ModelStatus::Ok;
  WriterError writer_error_{};
  LogFn log_ = nullptr;
  void* log_context_ = nullptr;
};

}  // namespace dlavm::runtime

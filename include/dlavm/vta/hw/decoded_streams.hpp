// DecodedStreams: the decoded instructions of streams, by the streams' content and the
// micro-op base they were placed at, up to a byte budget and kMaxEntries streams (the oldest
// leave first; a lookup compares hashes entry by entry, then the whole stream). SimDevice keeps
// the streams it has proven free of races in one: the check depends on the stream alone, an
// executor runs the same streams step after step, and the same stream placed at the same base
// decodes to the same instructions.
//
//   const auto* prog = proven.find(stream, base);
//   if (!prog) { auto p = decode_all(...); check_hazards(...); proven.insert(stream, base, p); }
#pragma once

#include <dlavm/runtime/isa.hpp>
#include <dlavm/vta/hw/stream.hpp>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <string_view>
#include <utility>
#include <vector>

namespace dlavm::vta::detail {

class DecodedStreams {
 public:
  static constexpr std::size_t kDefaultBytes = std::size_t{8} << 20;
  static constexpr std::size_t kMaxEntries = 256;

  explicit DecodedStreams(std::size_t max_bytes = kDefaultBytes) : max_bytes_(max_bytes) {}

  // The instructions kept for `s` placed at micro-op `uop_base`, or nullptr. (Valid until the
  // next insert.)
  const std::vector<runtime::InsnFields>* find(const Stream& s, std::uint64_t uop_base) const {
    const auto h = hash(s, uop_base);
    for (const auto& e : entries_)
      if (e.hash == h && e.uop_base == uop_base && e.stream.insns == s.insns &&
          e.stream.uops == s.uops && e.stream.uop_relocs == s.uop_relocs)
        return &e.prog;
    return nullptr;
  }

  // Keeps `prog`, the words of `s` decoded as placed at `uop_base`. A stream larger than the
  // budget is not kept.
  void insert(const Stream& s, std::uint64_t uop_base, std::vector<runtime::InsnFields> prog) {
    const auto b = entry_bytes(s);
    if (b > max_bytes_) return;
    while (!entries_.empty() && (bytes_ + b > max_bytes_ || entries_.size() == kMaxEntries)) {
      bytes_ -= entry_bytes(entries_.front().stream);
      entries_.pop_front();
    }
    entries_.push_back({hash(s, uop_base), uop_base, s, std::move(prog)});
    bytes_ += b;
  }

  std::size_t size() const { return entries_.size(); }

  // What the entry for `s` counts against the budget: its words, its decoded instructions (one
  // per word) and its own fields.
  static std::size_t entry_bytes(const Stream& s) {
    return sizeof(Entry) + s.insn_bytes() + s.insns.size() * sizeof(runtime::InsnFields) +
           s.uop_bytes() + s.uop_relocs.size() * sizeof(std::uint32_t);
  }

 private:
  struct Entry {
    std::uint64_t hash;
    std::uint64_t uop_base;
    Stream stream;
    std::vector<runtime::InsnFields> prog;
  };

  template <class T>
  static std::size_t hash_of(const std::vector<T>& v) {
    return std::hash<std::string_view>{}(
        std::string_view(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T)));
  }
  static std::uint64_t hash(const Stream& s, std::uint64_t uop_base) {
    std::uint64_t h = uop_base;
    for (const std::uint64_t part : {hash_of(s.insns), hash_of(s.uops), hash_of(s.uop_relocs)})
      h = (h ^ part) * 0x100000001b3ULL;
    return h;
  }

  std::size_t max_bytes_;
  std::size_t bytes_ = 0;
  std::deque<Entry> entries_;
};

}  // namespace dlavm::vta::detail

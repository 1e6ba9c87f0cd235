// DecodedStreams: the streams a device has proven free of races, by the streams' content and
// the micro-op base they were placed at, with their decoded instructions where those take at
// most a per-stream limit (a larger stream is decoded again at each run, but not checked
// again), up to a byte budget and kMaxEntries streams (the oldest leave first; a lookup
// compares hashes entry by entry, then the whole stream). SimDevice keeps the streams it has
// proven in one: the check depends on the stream alone, an executor runs the same streams step
// after step, and the same stream placed at the same base decodes to the same instructions.
//
//   const auto found = proven.find(stream, base);
//   if (!found.decoded) { prog = decode_all(...); if (!found.proven) check_hazards(...); ... }
// A stream not found is decoded from the latest like it where their words agree (decode), and
// checked like one kept (find_like: the same tokens, check_hazards_like).
#pragma once

#include <dlavm/runtime/isa.hpp>
#include <dlavm/vta/hw/hazards.hpp>
#include <dlavm/vta/hw/isa.hpp>
#include <dlavm/vta/hw/stream.hpp>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

namespace dlavm::vta::detail {

class DecodedStreams {
 public:
  // 64 MiB of streams (the LLM layer's 2,048-token prefill is 20 MiB of words), each one's
  // decode kept where it takes at most 8 MiB (about 87,000 instructions).
  static constexpr std::size_t kDefaultBytes = std::size_t{64} << 20;
  static constexpr std::size_t kDefaultDecodedBytes = std::size_t{8} << 20;
  static constexpr std::size_t kMaxEntries = 256;

  explicit DecodedStreams(std::size_t max_bytes = kDefaultBytes,
                          std::size_t max_decoded_bytes = kDefaultDecodedBytes)
      : max_bytes_(max_bytes), max_decoded_bytes_(max_decoded_bytes) {}

  // What find() knows of a stream: whether it was proven, and its decoded instructions where
  // they were kept (valid until the next insert).
  struct Found {
    bool proven = false;
    const std::vector<runtime::InsnFields>* decoded = nullptr;
  };

  // The stream `s` placed at micro-op `uop_base`, if proven.
  Found find(const Stream& s, std::uint64_t uop_base) const {
    const auto h = hash(s, uop_base);
    for (const auto& e : entries_)
      if (e.hash == h && e.uop_base == uop_base && e.stream.insns == s.insns &&
          e.stream.uops == s.uops && e.stream.uop_relocs == s.uop_relocs)
        return {true, keeps_decode(s) ? &e.prog : nullptr};
    return {};
  }

  // Keeps `s` as proven, with `prog`, its words decoded as placed at `uop_base`, and `proof`,
  // what its race check kept (check_hazards_proving), where the decode takes at most the
  // per-stream limit. A stream larger than the budget is not kept.
  void insert(const Stream& s, std::uint64_t uop_base, std::vector<runtime::InsnFields> prog,
              HazardProof proof = {}) {
    if (!keeps_decode(s)) {
      prog = {};
      proof = {};
    }
    const auto b = entry_bytes(s) + proof.bytes();
    if (b > max_bytes_) return;
    while (!entries_.empty() && (bytes_ + b > max_bytes_ || entries_.size() == kMaxEntries)) {
      bytes_ -= entries_.front().bytes;
      entries_.pop_front();
    }
    const auto tokens = token_hash(prog);
    entries_.push_back(
        {hash(s, uop_base), uop_base, s, std::move(prog), tokens, std::move(proof), b});
    bytes_ += b;
  }

  // decode_all(layout, words) of `words`, stream `s`'s words as placed with its micro-ops at
  // micro-op `uop_base` (the layout the kept decodes were made with): where the latest stream
  // kept decoded with as many instructions was placed at the same base and relocates the same
  // words, each word equal to the one at its index there takes that one's decode (the same
  // word placed the same way); the others are decoded.
  std::vector<runtime::InsnFields> decode(const IsaLayout& layout, std::span<const InsnWord> words,
                                          const Stream& s, std::uint64_t uop_base) const {
    const Entry* like = nullptr;
    for (auto e = entries_.rbegin(); e != entries_.rend() && like == nullptr; ++e)
      if (!e->prog.empty() && e->prog.size() == words.size() && e->uop_base == uop_base &&
          e->stream.uop_relocs == s.uop_relocs)
        like = &*e;
    if (like == nullptr || words.size() != s.insns.size()) return decode_all(layout, words);
    std::vector<runtime::InsnFields> out;
    out.reserve(words.size());
    for (std::size_t i = 0; i < words.size(); ++i)
      out.push_back(s.insns[i] == like->stream.insns[i] ? like->prog[i]
                                                        : vta::decode(layout, words[i], i));
    return out;
  }

  // The proven stream kept decoded that is most like `prog` (decoded as placed) for
  // check_hazards_like: the latest with as many instructions and the same hash of their modules
  // and dependency flags (check_hazards_like compares them), with its proof where kept, or
  // nullopt. Valid until the next insert.
  struct Like {
    DecodedStream stream;
    const HazardProof* proof = nullptr;
  };
  std::optional<Like> find_like(std::span<const runtime::InsnFields> prog) const {
    const auto tokens = token_hash(prog);
    for (auto e = entries_.rbegin(); e != entries_.rend(); ++e)
      if (e->prog.size() == prog.size() && !prog.empty() && e->tokens == tokens)
        return Like{{e->prog, e->stream.uops, e->uop_base},
                    e->proof.first.empty() ? nullptr : &e->proof};
    return std::nullopt;
  }

  std::size_t size() const { return entries_.size(); }

  // Whether `s`'s entry keeps its decode, and the proof that comes with it.
  bool keeps_decode(const Stream& s) const { return decoded_bytes(s) <= max_decoded_bytes_; }

  // What the entry for `s` counts against the budget: its words, micro-ops, relocations and own
  // fields, and its decoded instructions (one per word) where it keeps them (and the proof kept
  // with them, HazardProof::bytes, beside).
  std::size_t entry_bytes(const Stream& s) const {
    const std::size_t own = sizeof(Entry) + s.insn_bytes() + s.uop_bytes() +
                            s.uop_relocs.size() * sizeof(std::uint32_t);
    return own + (keeps_decode(s) ? decoded_bytes(s) : 0);
  }
  static std::size_t decoded_bytes(const Stream& s) {
    return s.insns.size() * sizeof(runtime::InsnFields);
  }

 private:
  struct Entry {
    std::uint64_t hash;
    std::uint64_t uop_base;
    Stream stream;
    std::vector<runtime::InsnFields> prog;  // empty where the decode is not kept
    std::uint64_t tokens;                   // token_hash(prog)
    HazardProof proof;                      // kept with the decode (empty where none)
    std::size_t bytes;                      // what it counts against the budget
  };

  // A hash of each instruction's module and dependency flags (token_bits).
  static std::uint64_t token_hash(std::span<const runtime::InsnFields> prog) {
    std::uint64_t h = 0xcbf29ce484222325ULL;
    for (const auto& f : prog) h = (h ^ token_bits(f)) * 0x100000001b3ULL;
    return h;
  }

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

  std::size_t max_bytes_, max_decoded_bytes_;
  std::size_t bytes_ = 0;
  std::deque<Entry> entries_;
};

}  // namespace dlavm::vta::detail

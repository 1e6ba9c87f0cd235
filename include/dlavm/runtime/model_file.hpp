// The model files deploy::emit writes beside a generated header: <name>.weights.bin (the
// weight region's image) and <name>.insts.bin (the static instruction and micro-op streams).
// Each is a 96-byte header, then the payload:
//
//   offset  size  field
//        0     8  magic: "DLAVMWGT" (weights) or "DLAVMINS" (instructions)
//        8     4  format version (kFormatVersion)
//       12     4  header bytes (96)
//       16    12  the VTA configuration built for: its 12 log2 parameters, one byte each
//               (ConfigId: inp, wgt, acc, out widths, batch, block in, block out, uop, inp,
//               wgt, acc buffer sizes, bus width)
//       28     4  reserved, 0
//       32    12  instructions per queue (load, compute, store); 0 for weights
//       44     4  micro-op words; 0 for weights
//       48     8  payload bytes: for instructions, 16 per instruction and 4 per micro-op word
//       56     8  checksum (FNV-1a, 64 bits) of the whole file, header and payload, with these
//               8 bytes read as 0
//       64    32  model name, NUL-padded
//
// all little-endian. check_model_file refuses a wrong magic or version, another
// configuration, header fields that disagree (reserved bytes, counts and payload size), a
// truncated file and a file whose checksum differs: every byte of the header and the payload
// is covered (tampered, or another build: the generated header holds the checksum it was built
// with). Version 1 files (whose checksum covered the payload only) are refused as BadVersion.
// Standard library only, no exceptions, C++17.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dlavm::runtime {

inline constexpr std::uint32_t kFormatVersion = 2;
inline constexpr std::size_t kFileHeaderBytes = 96;
inline constexpr std::size_t kModelNameBytes = 32;

// What went wrong, in firmware: every runtime entry point returns one.
enum class ModelStatus : std::int32_t {
  Ok = 0,
  BadMagic,       // not a dlavm model file of this kind
  BadVersion,     // a file format version this runtime does not read
  WrongConfig,    // built for another VTA configuration
  Truncated,      // shorter than its header says
  BadChecksum,    // the payload's checksum differs from the header's
  WrongModel,     // a valid file of another model or build (checksum or size differs)
  DimOutOfRange,  // a symbolic dim outside its range
  NoMemory,       // the driver could not allocate the model's memory
  Misaligned,     // the memory the driver gave is not aligned to VTA's elements
  NotOpen,        // the session has no memory (open failed or was not called)
  NotLoaded,      // run before load_params / prepare
  StreamError,    // encoding an instruction stream failed (error() holds the writer's)
  DeviceError,    // VTADeviceRun failed or timed out
  AddressRange,   // a DRAM address moved to where the driver's memory is leaves its field
  BadHeader,      // header fields that disagree (reserved bytes, counts, payload size)
};

constexpr const char* status_name(ModelStatus s) {
  switch (s) {
    case ModelStatus::Ok:
      return "ok";
    case ModelStatus::BadMagic:
      return "not a model file of this kind (bad magic)";
    case ModelStatus::BadVersion:
      return "unsupported file format version";
    case ModelStatus::WrongConfig:
      return "built for another VTA configuration";
    case ModelStatus::Truncated:
      return "truncated file";
    case ModelStatus::BadChecksum:
      return "payload checksum mismatch (tampered or corrupted)";
    case ModelStatus::WrongModel:
      return "file of another model or build";
    case ModelStatus::DimOutOfRange:
      return "symbolic dim out of range";
    case ModelStatus::NoMemory:
      return "device memory allocation failed";
    case ModelStatus::Misaligned:
      return "device memory not aligned to VTA's elements";
    case ModelStatus::NotOpen:
      return "session not open";
    case ModelStatus::NotLoaded:
      return "weights or streams not loaded";
    case ModelStatus::StreamError:
      return "instruction stream encoding failed";
    case ModelStatus::DeviceError:
      return "VTA device run failed";
    case ModelStatus::AddressRange:
      return "device memory placed where a stream's addresses do not fit their fields";
    case ModelStatus::BadHeader:
      return "file header fields disagree (reserved bytes, counts or payload size)";
  }
  return "unknown status";
}

// A VTA configuration's 12 log2 parameters (the order of the file header).
struct ConfigId {
  std::uint8_t logs[12] = {};
  constexpr bool operator==(const ConfigId& o) const {
    for (int i = 0; i < 12; ++i)
      if (logs[i] != o.logs[i]) return false;
    return true;
  }
  constexpr bool operator!=(const ConfigId& o) const { return !(*this == o); }
};

enum class FileKind : std::uint8_t { Weights, Insts };

struct FileHeader {
  FileKind kind = FileKind::Weights;
  std::uint32_t version = kFormatVersion;
  ConfigId config;
  std::uint32_t queue_insns[3] = {};
  std::uint32_t uop_words = 0;
  std::uint64_t payload_bytes = 0;
  std::uint64_t checksum = 0;
  char name[kModelNameBytes] = {};
};

constexpr std::uint64_t fnv1a(const std::uint8_t* p, std::size_t n,
                              std::uint64_t h = 0xcbf29ce484222325ULL) {
  for (std::size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}

namespace file_detail {
constexpr const char* magic(FileKind k) { return k == FileKind::Weights ? "DLAVMWGT" : "DLAVMINS"; }
constexpr void put(std::uint8_t* p, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}
constexpr std::uint64_t get(const std::uint8_t* p, int bytes) {
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= std::uint64_t{p[i]} << (8 * i);
  return v;
}
}  // namespace file_detail

// The checksum of a file whose header (at `file`) is followed by `payload_bytes` bytes: FNV-1a
// over the header, its checksum field read as 0, then the payload.
constexpr std::uint64_t file_checksum(const std::uint8_t* file, std::uint64_t payload_bytes) {
  constexpr std::uint8_t zeros[8] = {};
  std::uint64_t h = fnv1a(file, 56);
  h = fnv1a(zeros, 8, h);
  h = fnv1a(file + 64, kFileHeaderBytes - 64, h);
  return fnv1a(file + kFileHeaderBytes, static_cast<std::size_t>(payload_bytes), h);
}

// Writes the 96 header bytes as `h` gives them, its checksum included (seal_file computes it).
constexpr void write_file_header(const FileHeader& h, std::uint8_t* out) {
  using namespace file_detail;
  for (std::size_t i = 0; i < kFileHeaderBytes; ++i) out[i] = 0;
  for (int i = 0; i < 8; ++i) out[i] = static_cast<std::uint8_t>(magic(h.kind)[i]);
  put(out + 8, h.version, 4);
  put(out + 12, kFileHeaderBytes, 4);
  for (int i = 0; i < 12; ++i) out[16 + i] = h.config.logs[i];
  for (int q = 0; q < 3; ++q) put(out + 32 + 4 * q, h.queue_insns[q], 4);
  put(out + 44, h.uop_words, 4);
  put(out + 48, h.payload_bytes, 8);
  put(out + 56, h.checksum, 8);
  for (std::size_t i = 0; i < kModelNameBytes && h.name[i] != 0; ++i)
    out[64 + i] = static_cast<std::uint8_t>(h.name[i]);
}

// Writes the checksum of a file whose header and payload are in place (write_file_header's,
// then the payload) into its header, and returns it.
constexpr std::uint64_t seal_file(std::uint8_t* file) {
  const std::uint64_t sum = file_checksum(file, file_detail::get(file + 48, 8));
  file_detail::put(file + 56, sum, 8);
  return sum;
}

// Checks a file of `size` bytes: its kind, version, configuration, header fields, size and
// checksum; on Ok, `header` holds its fields and the payload follows the header.
constexpr ModelStatus check_model_file(const std::uint8_t* file, std::size_t size, FileKind kind,
                                       const ConfigId& config, FileHeader& header) {
  using namespace file_detail;
  if (file == nullptr || size < 16) return ModelStatus::Truncated;
  for (int i = 0; i < 8; ++i)
    if (file[i] != static_cast<std::uint8_t>(magic(kind)[i])) return ModelStatus::BadMagic;
  header.kind = kind;
  header.version = static_cast<std::uint32_t>(get(file + 8, 4));
  if (header.version != kFormatVersion) return ModelStatus::BadVersion;
  if (size < kFileHeaderBytes || get(file + 12, 4) != kFileHeaderBytes)
    return ModelStatus::Truncated;
  for (int i = 0; i < 12; ++i) header.config.logs[i] = file[16 + i];
  if (header.config != config) return ModelStatus::WrongConfig;
  for (int q = 0; q < 3; ++q)
    header.queue_insns[q] = static_cast<std::uint32_t>(get(file + 32 + 4 * q, 4));
  header.uop_words = static_cast<std::uint32_t>(get(file + 44, 4));
  header.payload_bytes = get(file + 48, 8);
  header.checksum = get(file + 56, 8);
  for (std::size_t i = 0; i < kModelNameBytes; ++i)
    header.name[i] = static_cast<char>(file[64 + i]);
  // the fields must agree: reserved bytes 0; a weights file counts nothing; an instructions
  // file's payload is exactly its instructions and micro-op words
  if (get(file + 28, 4) != 0) return ModelStatus::BadHeader;
  const std::uint64_t insns =
      std::uint64_t{header.queue_insns[0]} + header.queue_insns[1] + header.queue_insns[2];
  if (kind == FileKind::Weights ? (insns != 0 || header.uop_words != 0)
                                : header.payload_bytes != insns * 16 + header.uop_words * 4ULL)
    return ModelStatus::BadHeader;
  if (header.payload_bytes > size - kFileHeaderBytes) return ModelStatus::Truncated;
  if (file_checksum(file, header.payload_bytes) != header.checksum) return ModelStatus::BadChecksum;
  return ModelStatus::Ok;
}

}  // namespace dlavm::runtime

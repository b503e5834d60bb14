// The container format of saved sessions (docs/session-format.md): a fixed header (magic, version,
// size, CRC-32), the model fingerprint, then tagged sections. This file knows nothing about models;
// Session::Save/Load decide what the sections hold. Little-endian hosts only (static_assert'ed).
//
//   offset  size  field
//   0       8     magic "QWRTSESS"
//   8       4     u32 format version (kSessionFormatVersion)
//   12      4     u32 flags (0)
//   16      8     u64 file size in bytes
//   24      4     u32 CRC-32 (IEEE, as zlib.crc32) of bytes [32, file size)
//   28      4     u32 reserved (0)
//   32      4     u32 fingerprint length F
//   36      F     model fingerprint (bytes)
//   36+F    ...   sections: u32 tag, u32 reserved (0), u64 payload length N, N payload bytes
#pragma once

#include <bit>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace qwenrt {

static_assert(std::endian::native == std::endian::little, "session files are little-endian");

inline constexpr uint32_t kSessionFormatVersion = 1;
// Files of sessions that keep the MTP draft head's state (its MTPK / MTPH sections,
// docs/session-format.md): a reader from before those sections refuses them by version instead of
// by an unknown section. Files without them are still written as version 1.
inline constexpr uint32_t kSessionFormatVersionMtp = 2;
inline constexpr size_t kSessionHeaderSize = 32;  // fixed part before the fingerprint

// Four-character section tag, stored as the little-endian u32 of its bytes ("TOKS" -> 'T' first).
constexpr uint32_t SectionTag(const char (&s)[5]) {
  return uint32_t(uint8_t(s[0])) | uint32_t(uint8_t(s[1])) << 8 | uint32_t(uint8_t(s[2])) << 16 |
         uint32_t(uint8_t(s[3])) << 24;
}
std::string SectionTagName(uint32_t tag);

// CRC-32 (IEEE 802.3 polynomial, reflected; same as zlib.crc32). Pass the previous result to
// continue over several pieces: Crc32(b, nb, Crc32(a, na)).
uint32_t Crc32(const void* data, size_t n, uint32_t crc = 0);

// Where a SessionWriter puts its bytes.
class ByteSink {
 public:
  virtual ~ByteSink() = default;
  virtual Status Write(const void* data, size_t n) = 0;
  // Overwrites bytes already written (the header is patched at the end).
  virtual Status WriteAt(uint64_t offset, const void* data, size_t n) = 0;
};

class VectorSink : public ByteSink {
 public:
  explicit VectorSink(std::vector<uint8_t>* out) : out_(out) {}
  Status Write(const void* data, size_t n) override;
  Status WriteAt(uint64_t offset, const void* data, size_t n) override;

 private:
  std::vector<uint8_t>* out_;
};

// Streams a session file into a sink: header, fingerprint, then sections whose payload length is
// declared up front (so nothing has to be buffered). Errors are sticky: after the first failing
// write every call is a no-op and Finish() returns that error.
class SessionWriter {
 public:
  SessionWriter(ByteSink* sink, std::string_view fingerprint,
                uint32_t version = kSessionFormatVersion);

  void BeginSection(uint32_t tag, uint64_t payload_bytes);
  void PutU32(uint32_t v) { PutBytes(&v, sizeof v); }
  void PutU64(uint64_t v) { PutBytes(&v, sizeof v); }
  void PutI64(int64_t v) { PutBytes(&v, sizeof v); }
  void PutBytes(const void* data, size_t n);
  void PutFloats(std::span<const float> v) { PutBytes(v.data(), v.size_bytes()); }
  // Checks that the section got exactly the bytes BeginSection declared.
  void EndSection();
  // Patches size and CRC into the header; returns the first error seen.
  Status Finish();
  uint64_t bytes_written() const { return size_; }

 private:
  ByteSink* sink_;
  Status status_;
  uint64_t size_ = 0;
  uint32_t crc_ = 0;  // over bytes [32, size_)
  bool in_section_ = false;
  uint64_t section_left_ = 0;
};

// Reads a bounded byte range; any read past its end is a BadFormat error naming `what`.
class ByteCursor {
 public:
  ByteCursor(std::span<const uint8_t> bytes, std::string what)
      : bytes_(bytes), what_(std::move(what)) {}
  Status U32(uint32_t* v) { return Bytes(v, sizeof *v); }
  Status U64(uint64_t* v) { return Bytes(v, sizeof *v); }
  Status I64(int64_t* v) { return Bytes(v, sizeof *v); }
  Status Bytes(void* dst, size_t n);
  Status Floats(float* dst, size_t n);
  // A view of the next n bytes (no copy).
  Status View(size_t n, std::span<const uint8_t>* out);
  size_t remaining() const { return bytes_.size() - pos_; }
  // BadFormat unless every byte was consumed.
  Status ExpectEnd() const;

 private:
  std::span<const uint8_t> bytes_;
  size_t pos_ = 0;
  std::string what_;
};

struct SessionSection {
  uint32_t tag = 0;
  std::span<const uint8_t> payload;
};

// Parses and verifies a whole session file held in memory (the bytes must outlive the result).
// Errors: BadFormat (too short, bad magic, size mismatch, checksum mismatch, malformed section
// table), Unsupported (other format version), InvalidArgument (written for another model: the
// fingerprint differs from `expected_fingerprint`).
struct ParsedSessionFile {
  uint32_t version = 0;
  std::string fingerprint;
  std::vector<SessionSection> sections;  // in file order
};
StatusOr<ParsedSessionFile> ParseSessionFile(std::span<const uint8_t> bytes,
                                             std::string_view expected_fingerprint);

// Writes a file atomically: `write` streams into a temporary file next to `path`, which is synced
// and renamed over `path` only if everything succeeded (a crash leaves the old file or the new
// one, never a mix). On error the temporary file is removed and `path` is untouched.
Status WriteFileAtomic(const std::string& path, const std::function<Status(ByteSink*)>& write);

// Reads a whole file into memory. IoError if it cannot be opened or read.
StatusOr<std::vector<uint8_t>> ReadWholeFile(const std::string& path);

}  // namespace qwenrt

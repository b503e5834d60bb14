// Session file container: CRC-32, streaming writer, verifying parser, atomic file write.
#include "session/session_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <new>

#include "base/guard_alloc.h"

namespace qwenrt {
namespace {

constexpr char kMagic[8] = {'Q', 'W', 'R', 'T', 'S', 'E', 'S', 'S'};
constexpr uint64_t kSizeOffset = 16;
constexpr uint64_t kCrcOffset = 24;

std::array<uint32_t, 256> MakeCrcTable() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    t[i] = c;
  }
  return t;
}

// Writes to a file descriptor through a buffer (the KV can be hundreds of MiB: no whole-file copy).
class FdSink : public ByteSink {
 public:
  explicit FdSink(int fd) : fd_(fd) { buf_.reserve(kBufBytes); }
  Status Write(const void* data, size_t n) override {
    const auto* p = static_cast<const uint8_t*>(data);
    if (buf_.size() + n > kBufBytes) {
      QWENRT_RETURN_IF_ERROR(Flush());
      if (n >= kBufBytes) return WriteAll(p, n, /*at=*/-1);
    }
    buf_.insert(buf_.end(), p, p + n);
    return OkStatus();
  }
  Status WriteAt(uint64_t offset, const void* data, size_t n) override {
    QWENRT_RETURN_IF_ERROR(Flush());
    return WriteAll(static_cast<const uint8_t*>(data), n, static_cast<int64_t>(offset));
  }
  Status Flush() {
    Status s = WriteAll(buf_.data(), buf_.size(), -1);
    buf_.clear();
    return s;
  }

 private:
  static constexpr size_t kBufBytes = 1 << 20;
  Status WriteAll(const uint8_t* p, size_t n, int64_t at) {
    while (n > 0) {
      ssize_t w = at < 0 ? ::write(fd_, p, n) : ::pwrite(fd_, p, n, static_cast<off_t>(at));
      if (w < 0) {
        if (errno == EINTR) continue;
        return IoError("write failed: {}", std::strerror(errno));
      }
      p += w;
      n -= static_cast<size_t>(w);
      if (at >= 0) at += w;
    }
    return OkStatus();
  }
  int fd_;
  std::vector<uint8_t> buf_;
};

// Bytes from a file or a caller (fingerprints, paths) for messages: printable ASCII kept,
// everything else as \xNN, at most `max` bytes shown. The result is ASCII, so an error text stays
// valid UTF-8 without NULs whatever the file holds.
std::string Printable(std::string_view s, size_t max) {
  std::string out;
  const size_t n = std::min(s.size(), max);
  for (size_t i = 0; i < n; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("\\x{:02x}", c);
    }
  }
  if (n < s.size()) out += "...";
  return out;
}
std::string P(const std::string& path) { return Printable(path, 1024); }

// Opens `path` read-only and checks it is a regular file; returns the descriptor (the caller
// closes it) and its size in *size. The open is non-blocking: a blocking open of a FIFO waits
// for a writer forever, before the regular-file check could refuse it. Regular files ignore the
// flag, so it is cleared only for tidiness.
StatusOr<int> OpenRegularFile(const std::string& path, size_t* size) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return IoError("cannot open '{}': {}", P(path), std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return IoError("'{}' is not a regular file", P(path));
  }
  const int fl = ::fcntl(fd, F_GETFL);
  if (fl >= 0) ::fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  *size = static_cast<size_t>(st.st_size);
  return fd;
}

}  // namespace

std::string SectionTagName(uint32_t tag) {
  std::string s(4, '?');
  for (int i = 0; i < 4; ++i) {
    char c = static_cast<char>((tag >> (8 * i)) & 0xFF);
    if (c >= 0x20 && c < 0x7F) s[i] = c;
  }
  return s;
}

uint32_t Crc32(const void* data, size_t n, uint32_t crc) {
  static const std::array<uint32_t, 256> table = MakeCrcTable();
  const auto* p = static_cast<const uint8_t*>(data);
  crc = ~crc;
  for (size_t i = 0; i < n; ++i) crc = table[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

Status VectorSink::Write(const void* data, size_t n) {
  QWENRT_RETURN_IF_ERROR(GuardAlloc(
      [&] {
        const auto* p = static_cast<const uint8_t*>(data);
        out_->insert(out_->end(), p, p + n);
      },
      "session buffer: cannot grow to {} bytes", out_->size() + n));
  return OkStatus();
}

Status VectorSink::WriteAt(uint64_t offset, const void* data, size_t n) {
  if (offset + n > out_->size()) return InternalError("session buffer: patch past the end");
  std::memcpy(out_->data() + offset, data, n);
  return OkStatus();
}

SessionWriter::SessionWriter(ByteSink* sink, std::string_view fingerprint, uint32_t version)
    : sink_(sink) {
  uint8_t header[kSessionHeaderSize] = {};
  std::memcpy(header, kMagic, 8);
  std::memcpy(header + 8, &version, 4);
  status_ = sink_->Write(header, sizeof header);
  size_ = sizeof header;
  PutU32(static_cast<uint32_t>(fingerprint.size()));
  PutBytes(fingerprint.data(), fingerprint.size());
}

void SessionWriter::BeginSection(uint32_t tag, uint64_t payload_bytes) {
  if (!status_.ok()) return;
  if (in_section_) {
    status_ = InternalError("session writer: section {} not ended", SectionTagName(tag));
    return;
  }
  PutU32(tag);
  PutU32(0);
  PutU64(payload_bytes);
  in_section_ = true;
  section_left_ = payload_bytes;
}

void SessionWriter::PutBytes(const void* data, size_t n) {
  if (!status_.ok() || n == 0) return;
  if (in_section_) {
    if (n > section_left_) {
      status_ = InternalError("session writer: section payload larger than declared");
      return;
    }
    section_left_ -= n;
  }
  status_ = sink_->Write(data, n);
  crc_ = Crc32(data, n, crc_);
  size_ += n;
}

void SessionWriter::EndSection() {
  if (!status_.ok()) return;
  if (!in_section_ || section_left_ != 0)
    status_ = InternalError("session writer: section ended with {} bytes missing", section_left_);
  in_section_ = false;
}

Status SessionWriter::Finish() {
  if (!status_.ok()) return status_;
  if (in_section_) return InternalError("session writer: unterminated section");
  QWENRT_RETURN_IF_ERROR(sink_->WriteAt(kSizeOffset, &size_, sizeof size_));
  return sink_->WriteAt(kCrcOffset, &crc_, sizeof crc_);
}

Status ByteCursor::Bytes(void* dst, size_t n) {
  if (n > remaining())
    return BadFormat("{}: truncated (needs {} more bytes, {} left)", what_, n, remaining());
  if (n) std::memcpy(dst, bytes_.data() + pos_, n);
  pos_ += n;
  return OkStatus();
}

Status ByteCursor::Floats(float* dst, size_t n) {
  if (n > remaining() / sizeof(float))
    return BadFormat("{}: truncated (needs {} floats, {} bytes left)", what_, n, remaining());
  return Bytes(dst, n * sizeof(float));
}

Status ByteCursor::View(size_t n, std::span<const uint8_t>* out) {
  if (n > remaining())
    return BadFormat("{}: truncated (needs {} bytes, {} left)", what_, n, remaining());
  *out = bytes_.subspan(pos_, n);
  pos_ += n;
  return OkStatus();
}

Status ByteCursor::ExpectEnd() const {
  if (remaining() != 0) return BadFormat("{}: {} unexpected trailing bytes", what_, remaining());
  return OkStatus();
}

StatusOr<ParsedSessionFile> ParseSessionFile(std::span<const uint8_t> bytes,
                                             std::string_view expected_fingerprint) {
  if (bytes.size() < kSessionHeaderSize + 4)
    return BadFormat("session file too short ({} bytes): truncated or not a session file",
                     bytes.size());
  if (std::memcmp(bytes.data(), kMagic, 8) != 0)
    return BadFormat("not a qwenrt session file (bad magic)");
  ParsedSessionFile out;
  uint32_t flags = 0, crc = 0;
  uint64_t size = 0;
  std::memcpy(&out.version, bytes.data() + 8, 4);
  std::memcpy(&flags, bytes.data() + 12, 4);
  std::memcpy(&size, bytes.data() + kSizeOffset, 8);
  std::memcpy(&crc, bytes.data() + kCrcOffset, 4);
  if (out.version != kSessionFormatVersion && out.version != kSessionFormatVersionMtp)
    return Unsupported("session file format version {} (this library reads versions {} and {})",
                       out.version, kSessionFormatVersion, kSessionFormatVersionMtp);
  uint32_t header_reserved = 0;
  std::memcpy(&header_reserved, bytes.data() + 28, 4);
  if (flags != 0 || header_reserved != 0)
    return BadFormat("session file: unknown flags {:#x} / reserved {:#x}", flags, header_reserved);
  if (size != bytes.size())
    return BadFormat("session file: header says {} bytes but {} are present ({})", size,
                     bytes.size(), size > bytes.size() ? "truncated" : "trailing garbage");
  uint32_t actual = Crc32(bytes.data() + kSessionHeaderSize, bytes.size() - kSessionHeaderSize);
  if (actual != crc)
    return BadFormat("session file damaged: checksum {:08x}, expected {:08x}", actual, crc);

  ByteCursor cur(bytes.subspan(kSessionHeaderSize), "session file");
  uint32_t fp_len = 0;
  QWENRT_RETURN_IF_ERROR(cur.U32(&fp_len));
  std::span<const uint8_t> fp;
  QWENRT_RETURN_IF_ERROR(cur.View(fp_len, &fp));
  out.fingerprint.assign(reinterpret_cast<const char*>(fp.data()), fp.size());
  if (out.fingerprint != expected_fingerprint)
    return InvalidArgument(
        "session file was saved with a different model (fingerprint {}, this model {})",
        Printable(out.fingerprint, 16), Printable(expected_fingerprint, 16));
  while (cur.remaining() > 0) {
    SessionSection s;
    uint32_t reserved = 0;
    uint64_t len = 0;
    QWENRT_RETURN_IF_ERROR(cur.U32(&s.tag));
    QWENRT_RETURN_IF_ERROR(cur.U32(&reserved));
    QWENRT_RETURN_IF_ERROR(cur.U64(&len));
    if (reserved != 0)
      return BadFormat("session file: section {} has reserved bits set", SectionTagName(s.tag));
    if (len > cur.remaining())
      return BadFormat("session file: section {} claims {} bytes, {} left", SectionTagName(s.tag),
                       len, cur.remaining());
    QWENRT_RETURN_IF_ERROR(cur.View(static_cast<size_t>(len), &s.payload));
    out.sections.push_back(s);
  }
  return out;
}

Status WriteFileAtomic(const std::string& path, const std::function<Status(ByteSink*)>& write) {
  static std::atomic<uint64_t> counter{0};
  std::string tmp = fmt::format("{}.tmp.{}.{}", path, static_cast<long>(::getpid()), counter++);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return IoError("cannot create '{}': {}", tmp, std::strerror(errno));
  Status s;
  {
    FdSink sink(fd);
    s = write(&sink);
    if (s.ok()) s = sink.Flush();
  }
  if (s.ok() && ::fsync(fd) != 0) s = IoError("fsync '{}': {}", tmp, std::strerror(errno));
  if (::close(fd) != 0 && s.ok()) s = IoError("close '{}': {}", tmp, std::strerror(errno));
  if (s.ok() && ::rename(tmp.c_str(), path.c_str()) != 0)
    s = IoError("cannot rename '{}' to '{}': {}", tmp, path, std::strerror(errno));
  if (!s.ok()) {
    ::unlink(tmp.c_str());
    return s;
  }
  // Make the rename itself durable.
  size_t slash = path.find_last_of('/');
  std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return OkStatus();
}

StatusOr<std::vector<uint8_t>> ReadWholeFile(const std::string& path) {
  size_t size = 0;
  QWENRT_ASSIGN_OR_RETURN(const int fd, OpenRegularFile(path, &size));
  // Session files only: a file that does not start with the magic, or whose header states another
  // size, is refused from its first 24 bytes, before its size is allocated and read (a 2 GiB file
  // of something else costs one small read). Shorter files are read and left to ParseSessionFile.
  if (size >= 24) {
    uint8_t head[24];
    const ssize_t r = ::pread(fd, head, sizeof head, 0);
    if (r == static_cast<ssize_t>(sizeof head)) {
      uint64_t declared = 0;
      std::memcpy(&declared, head + 16, sizeof declared);
      if (std::memcmp(head, kMagic, 8) != 0) {
        ::close(fd);
        return BadFormat("'{}' is not a qwenrt session file (bad magic)", P(path));
      }
      if (declared != size) {
        ::close(fd);
        return BadFormat("session file '{}' is {} bytes but its header says {}", P(path), size,
                         declared);
      }
    }
  }
  std::vector<uint8_t> out;
  try {
    out.resize(size);
  } catch (const std::bad_alloc&) {
    ::close(fd);
    return OutOfMemory("cannot allocate {} bytes to read '{}'", size, P(path));
  }
  size_t got = 0;
  while (got < out.size()) {
    ssize_t r = ::read(fd, out.data() + got, out.size() - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      ::close(fd);
      return IoError("read '{}' failed: {}", P(path),
                     r < 0 ? std::strerror(errno) : "unexpected end of file");
    }
    got += static_cast<size_t>(r);
  }
  ::close(fd);
  return out;
}

}  // namespace qwenrt

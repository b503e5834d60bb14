// Session file container: CRC-32 against known values, round trip, and refusal of every kind of
// damage (truncation, bit flips, wrong magic/version, wrong model) with the right error code.
#include "session/session_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace qwenrt {
namespace {

constexpr uint32_t kTagA = SectionTag("AAAA");
constexpr uint32_t kTagB = SectionTag("BBBB");

Status WriteSample(ByteSink* sink, std::string_view fingerprint) {
  SessionWriter w(sink, fingerprint);
  w.BeginSection(kTagA, 12);
  w.PutU32(7);
  w.PutI64(-3);
  w.EndSection();
  std::vector<float> f = {1.5f, -2.25f, 3.0f};
  w.BeginSection(kTagB, f.size() * sizeof(float));
  w.PutFloats(f);
  w.EndSection();
  return w.Finish();
}

std::vector<uint8_t> Sample(std::string_view fp = "model-1") {
  std::vector<uint8_t> bytes;
  VectorSink sink(&bytes);
  REQUIRE(WriteSample(&sink, fp).ok());
  return bytes;
}

std::string TempPath(const char* name) {
  return (std::filesystem::temp_directory_path() /
          (std::string("qwenrt_sf_") + std::to_string(::getpid()) + "_" + name))
      .string();
}

TEST_CASE("Crc32 matches zlib.crc32", "[session_file]") {
  CHECK(Crc32("", 0) == 0u);
  CHECK(Crc32("123456789", 9) == 0xCBF43926u);
  CHECK(Crc32("The quick brown fox jumps over the lazy dog", 43) == 0x414FA339u);
  // Continuation over pieces equals one pass.
  CHECK(Crc32("6789", 4, Crc32("12345", 5)) == 0xCBF43926u);
}

TEST_CASE("Session file round trip in memory", "[session_file]") {
  std::vector<uint8_t> bytes = Sample();
  CHECK(std::memcmp(bytes.data(), "QWRTSESS", 8) == 0);
  auto parsed = ParseSessionFile(bytes, "model-1");
  REQUIRE(parsed.ok());
  CHECK(parsed->version == kSessionFormatVersion);
  CHECK(parsed->fingerprint == "model-1");
  REQUIRE(parsed->sections.size() == 2);
  CHECK(parsed->sections[0].tag == kTagA);
  CHECK(SectionTagName(parsed->sections[1].tag) == "BBBB");
  ByteCursor a(parsed->sections[0].payload, "AAAA");
  uint32_t u = 0;
  int64_t i = 0;
  REQUIRE(a.U32(&u).ok());
  REQUIRE(a.I64(&i).ok());
  CHECK(u == 7);
  CHECK(i == -3);
  CHECK(a.ExpectEnd().ok());
  CHECK(a.U32(&u).code() == StatusCode::kBadFormat);  // reading past the end
  ByteCursor b(parsed->sections[1].payload, "BBBB");
  float f[3];
  REQUIRE(b.Floats(f, 3).ok());
  CHECK(f[1] == -2.25f);
  float g[1];
  CHECK(b.Floats(g, 1).code() == StatusCode::kBadFormat);
}

TEST_CASE("Session file refuses damage, truncation, other versions and other models",
          "[session_file]") {
  const std::vector<uint8_t> good = Sample();
  SECTION("every truncation") {
    for (size_t n = 0; n < good.size(); ++n) {
      std::vector<uint8_t> t(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n));
      auto r = ParseSessionFile(t, "model-1");
      REQUIRE_FALSE(r.ok());
      CHECK(r.status().code() == StatusCode::kBadFormat);
    }
  }
  SECTION("every single bit flip is detected") {
    for (size_t byte = 0; byte < good.size(); ++byte) {
      for (int bit = 0; bit < 8; ++bit) {
        std::vector<uint8_t> d = good;
        d[byte] ^= uint8_t(1u << bit);
        auto r = ParseSessionFile(d, "model-1");
        INFO("byte " << byte << " bit " << bit);
        REQUIRE_FALSE(r.ok());
        // Flips in the version field read as an unsupported version; all others as damage.
        if (byte >= 8 && byte < 12)
          CHECK(r.status().code() == StatusCode::kUnsupported);
        else
          CHECK(r.status().code() == StatusCode::kBadFormat);
      }
    }
  }
  SECTION("trailing bytes") {
    std::vector<uint8_t> d = good;
    d.push_back(0);
    CHECK(ParseSessionFile(d, "model-1").status().code() == StatusCode::kBadFormat);
  }
  SECTION("wrong model") {
    auto r = ParseSessionFile(good, "model-2");
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == StatusCode::kInvalidArgument);
    CHECK(r.status().message().find("different model") != std::string::npos);
  }
  SECTION("a section overrunning the file, with a valid checksum") {
    std::vector<uint8_t> d = good;
    // The first section's length field sits after the header, fingerprint and tag + reserved.
    size_t len_at = kSessionHeaderSize + 4 + 7 + 8;
    uint64_t huge = 1ull << 40;
    std::memcpy(d.data() + len_at, &huge, 8);
    uint32_t crc = Crc32(d.data() + kSessionHeaderSize, d.size() - kSessionHeaderSize);
    std::memcpy(d.data() + 24, &crc, 4);
    auto r = ParseSessionFile(d, "model-1");
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == StatusCode::kBadFormat);
  }
}

TEST_CASE("Session writer checks declared section sizes", "[session_file]") {
  std::vector<uint8_t> bytes;
  VectorSink sink(&bytes);
  SessionWriter w(&sink, "m");
  w.BeginSection(kTagA, 8);
  w.PutU32(1);
  w.EndSection();  // 4 bytes short
  CHECK(w.Finish().code() == StatusCode::kInternal);
  std::vector<uint8_t> bytes2;
  VectorSink sink2(&bytes2);
  SessionWriter w2(&sink2, "m");
  w2.BeginSection(kTagA, 2);
  w2.PutU32(1);  // too long
  w2.EndSection();
  CHECK(w2.Finish().code() == StatusCode::kInternal);
}

TEST_CASE("WriteFileAtomic writes the same bytes and leaves no temp file on failure",
          "[session_file]") {
  std::string path = TempPath("atomic.qws");
  std::filesystem::remove(path);
  REQUIRE(WriteFileAtomic(path, [](ByteSink* s) { return WriteSample(s, "model-1"); }).ok());
  auto read = ReadWholeFile(path);
  REQUIRE(read.ok());
  CHECK(*read == Sample());
  // A failing writer must not replace the existing file nor leave its temporary behind.
  Status s = WriteFileAtomic(path, [](ByteSink* sink) -> Status {
    SessionWriter w(sink, "model-1");
    w.BeginSection(kTagA, 100);
    return BadFormat("simulated failure");
  });
  CHECK(s.code() == StatusCode::kBadFormat);
  CHECK(*ReadWholeFile(path) == Sample());
  int n_files = 0;
  for (const auto& e :
       std::filesystem::directory_iterator(std::filesystem::path(path).parent_path()))
    if (e.path().filename().string().rfind(std::filesystem::path(path).filename().string(), 0) == 0)
      ++n_files;
  CHECK(n_files == 1);
  std::filesystem::remove(path);
  CHECK(ReadWholeFile(path).status().code() == StatusCode::kIo);
  { std::ofstream empty(path); }
  auto read_empty = ReadWholeFile(path);
  REQUIRE(read_empty.ok());
  CHECK(read_empty->empty());
  CHECK(ParseSessionFile(*read_empty, "m").status().code() == StatusCode::kBadFormat);
  std::filesystem::remove(path);
  CHECK(WriteFileAtomic("/nonexistent-dir/x.qws", [](ByteSink*) { return OkStatus(); }).code() ==
        StatusCode::kIo);
}

TEST_CASE("ReadWholeFile refuses a FIFO or a directory without blocking", "[session_file]") {
  // A blocking open of a FIFO waits for a writer forever; the open must not block.
  const std::string fifo = TempPath("fifo.qws");
  std::filesystem::remove(fifo);
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  auto r = ReadWholeFile(fifo);
  CHECK(r.status().code() == StatusCode::kIo);
  CHECK(r.status().message().find("not a regular file") != std::string::npos);
  std::filesystem::remove(fifo);
  CHECK(ReadWholeFile(std::filesystem::temp_directory_path().string()).status().code() ==
        StatusCode::kIo);
}

TEST_CASE("A foreign fingerprint is quoted escaped in the error", "[session_file]") {
  // Found by session_load_fuzz: the fingerprint bytes were echoed raw (NULs in last_error()).
  std::vector<uint8_t> bytes;
  VectorSink sink(&bytes);
  REQUIRE(WriteSample(&sink, std::string_view("ab\0\xff\x1b[2J", 8)).ok());
  auto parsed = ParseSessionFile(bytes, "model-1");
  REQUIRE(parsed.status().code() == StatusCode::kInvalidArgument);
  const std::string& msg = parsed.status().message();
  INFO(msg);
  CHECK(msg.find("ab\\x00\\xff\\x1b[2J") != std::string::npos);
  for (char c : msg)
    CHECK((static_cast<unsigned char>(c) >= 0x20 && static_cast<unsigned char>(c) < 0x7f));
}

TEST_CASE("ReadWholeFile refuses a large non-session file from its header", "[session_file]") {
  const std::string path = TempPath("big.bin");
  {
    std::ofstream o(path, std::ios::binary);
    o << "NOTASESSIONFILE-NOTASESSIONFILE";
  }
  std::filesystem::resize_file(path, uint64_t{2} << 30);  // sparse: nothing is written
  auto r = ReadWholeFile(path);
  CHECK(r.status().code() == StatusCode::kBadFormat);
  CHECK(r.status().message().find("bad magic") != std::string::npos);
  // A session header whose size field disagrees with the file is refused the same way.
  std::vector<uint8_t> bytes = Sample();
  bytes.resize(bytes.size() + 100);
  {
    std::ofstream o(path, std::ios::binary | std::ios::trunc);
    o.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  }
  r = ReadWholeFile(path);
  CHECK(r.status().code() == StatusCode::kBadFormat);
  CHECK(r.status().message().find("header says") != std::string::npos);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace qwenrt

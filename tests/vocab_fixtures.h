// The vocabularies tests tokenize with, each opened once per test program: the 512-token fixture
// model's and the genuine Qwen3.5 one (tests/data/tokenizer/README.md).
#pragma once

#include <catch2/catch.hpp>
#include <cstdio>
#include <string>
#include <vector>

#include "qwenrt/gguf.hpp"

namespace qwenrt::test {

// The tiny fixture model (its 512-token vocabulary).
inline const gguf::File& FixtureGguf() {
  static const gguf::File file = [] {
    gguf::Error err;
    auto f = gguf::File::Open(std::string(QWENRT_TEST_DATA) + "/tiny-s1-q4km.gguf", &err);
    if (!f) FAIL(err.ToString());
    return std::move(*f);
  }();
  return file;
}

// The committed vocabulary-only GGUF, decompressed with Debian's xz (10.9 MB -> memory).
inline const gguf::File& RealVocabGguf() {
  static const std::vector<uint8_t> bytes = [] {
    const std::string cmd =
        std::string("xz -dc '") + QWENRT_TEST_DATA + "/tokenizer/qwen35-vocab.gguf.xz'";
    std::vector<uint8_t> out;
    FILE* pipe = popen(cmd.c_str(), "r");
    if (pipe == nullptr) FAIL("cannot run: " << cmd);
    uint8_t buf[1 << 16];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof(buf), pipe)) > 0) out.insert(out.end(), buf, buf + n);
    if (pclose(pipe) != 0) FAIL("failed (is xz-utils installed?): " << cmd);
    return out;
  }();
  static const gguf::File file = [] {
    gguf::Error err;
    auto f = gguf::File::FromMemory(bytes.data(), bytes.size(), /*copy=*/false, &err);
    if (!f) FAIL(err.ToString());
    return std::move(*f);
  }();
  return file;
}

}  // namespace qwenrt::test

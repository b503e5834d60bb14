// Tokenizer tests: the peer's ids on the fixture vocabulary (texts and rendered chat prompts),
// round trips, streaming detokenization, NFC on/off, hostile bytes, metadata validation, and the
// genuine Qwen3.5 vocabulary against Hugging Face vectors (tests/data/tokenizer/README.md).
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pretokenizer.h"
#include "qwenrt/gguf.hpp"
#include "qwenrt/gguf_writer.hpp"
#include "tokenizer.h"
#include "unicode.h"

namespace qwenrt {
namespace {

const std::string kData = QWENRT_TEST_DATA;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::vector<int32_t>> ReadIdLines(const std::string& path) {
  std::vector<std::vector<int32_t>> lines;
  std::istringstream in(ReadFile(path));
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::vector<int32_t> ids;
    int32_t id;
    while (ls >> id) ids.push_back(id);
    lines.push_back(std::move(ids));
  }
  return lines;
}

const gguf::File& FixtureGguf() {
  static const gguf::File file = [] {
    gguf::Error err;
    auto f = gguf::File::Open(kData + "/tiny-s1-q4km.gguf", &err);
    if (!f) FAIL(err.ToString());
    return std::move(*f);
  }();
  return file;
}

const Tokenizer& FixtureTokenizer(bool nfc = true) {
  static const auto make = [](bool n) {
    TokenizerOptions o;
    o.nfc = n;
    auto t = Tokenizer::FromGguf(FixtureGguf(), o);
    if (!t.ok()) FAIL(t.status().ToString());
    return std::move(*t);
  };
  static const std::unique_ptr<Tokenizer> with_nfc = make(true), without_nfc = make(false);
  return nfc ? *with_nfc : *without_nfc;
}

// The fixture vocabulary's metadata, for building variants.
VocabData FixtureVocab() {
  const gguf::File& f = FixtureGguf();
  VocabData v;
  gguf::Error err;
  REQUIRE(f.GetStringArray("tokenizer.ggml.tokens", &v.tokens, &err));
  REQUIRE(f.GetI32Array("tokenizer.ggml.token_type", &v.token_types, &err));
  REQUIRE(f.GetStringArray("tokenizer.ggml.merges", &v.merges, &err));
  return v;
}

std::string Utf8(std::initializer_list<uint32_t> cps) {
  std::string s;
  for (uint32_t cp : cps) unicode::AppendUtf8(cp, &s);
  return s;
}

TEST_CASE("fixture vocabulary: peer ids for texts.inp", "[tokenizer][golden]") {
  const auto cases = SplitVocabTestFile(ReadFile(kData + "/tokenizer/texts.inp"));
  const auto expected = ReadIdLines(kData + "/tokenizer/texts.fixture-vocab.out");
  REQUIRE(cases.size() == expected.size());
  REQUIRE(cases.size() >= 40);
  // The peer does not normalize: with NFC off every case matches.
  const Tokenizer& peer = FixtureTokenizer(/*nfc=*/false);
  for (size_t i = 0; i < cases.size(); ++i) {
    INFO("case " << i << ": '" << cases[i] << "'");
    CHECK(peer.Encode(cases[i], /*parse_special=*/false) == expected[i]);
    CHECK(peer.Decode(expected[i]) == cases[i]);
  }
  // With NFC on, cases already in NFC match too; the decomposed ones (e + U+0301 ...; the
  // fixture README says there are none, there are three) tokenize as their NFC form.
  const Tokenizer& tok = FixtureTokenizer(/*nfc=*/true);
  int decomposed = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    INFO("case " << i << ": '" << cases[i] << "'");
    const std::string nfc = unicode::NfcUtf8(cases[i]);
    if (nfc == cases[i]) {
      CHECK(tok.Encode(cases[i]) == expected[i]);
    } else {
      ++decomposed;
      CHECK(tok.Encode(cases[i]) != expected[i]);
      CHECK(tok.Encode(cases[i]) == peer.Encode(nfc));
      CHECK(tok.Decode(tok.Encode(cases[i])) == nfc);
    }
  }
  CHECK(decomposed == 3);
}

TEST_CASE("fixture vocabulary: peer ids for rendered chat prompts", "[tokenizer][golden]") {
  const auto cases = SplitVocabTestFile(ReadFile(kData + "/tokenizer/chat.inp"));
  const auto expected = ReadIdLines(kData + "/tokenizer/chat.fixture-vocab.out");
  REQUIRE(cases.size() == expected.size());
  REQUIRE(!cases.empty());
  const Tokenizer& tok = FixtureTokenizer();
  for (size_t i = 0; i < cases.size(); ++i) {
    INFO("case " << i << ": '" << cases[i] << "'");
    CHECK(tok.Encode(cases[i], /*parse_special=*/true) == expected[i]);
    CHECK(tok.Decode(expected[i], /*special=*/true) == cases[i]);
  }
}

}  // namespace
}  // namespace qwenrt

// Tokenizer throughput: Encode MB/s with the genuine 248k Qwen3.5 vocabulary
// (tests/data/tokenizer/qwen35-vocab.gguf.xz, unpacked with xz) and with the 512-token fixture
// vocabulary, on a mixed corpus (English prose, code, chat markup, CJK, Cyrillic, emoji).
// Variants: piece cache on (steady state) and off (every piece runs BPE), NFC on and off.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "qwenrt/gguf.hpp"
#include "text/tokenizer.h"

namespace qwenrt {
namespace {

const std::string kData = QWENRT_TEST_DATA;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<uint8_t> Unxz(const std::string& path) {
  std::vector<uint8_t> out;
  FILE* pipe = popen(("xz -dc '" + path + "'").c_str(), "r");
  if (!pipe) return out;
  uint8_t buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), pipe)) > 0) out.insert(out.end(), buf, buf + n);
  pclose(pipe);
  return out;
}

// ~1 MB of mixed text: the chat template, the test texts and chat prompts, repeated with a
// counter so that not every piece is a cache hit.
const std::string& Corpus() {
  static const std::string corpus = [] {
    const std::string base = ReadFile(kData + "/chat/qwen3.5-chat-template.jinja") +
                             ReadFile(kData + "/tokenizer/texts.inp") +
                             ReadFile(kData + "/tokenizer/chat.inp") +
                             ReadFile(kData + "/tokenizer/qwen35-hf-vectors.json");
    std::string s;
    for (int i = 0; s.size() < (1 << 20); ++i) s += base + " run " + std::to_string(i) + "\n";
    return s;
  }();
  return corpus;
}

struct Vocab {
  std::vector<uint8_t> bytes;
  std::optional<gguf::File> file;
};

const gguf::File* RealVocab() {
  static Vocab v = [] {
    Vocab r;
    r.bytes = Unxz(kData + "/tokenizer/qwen35-vocab.gguf.xz");
    gguf::Error err;
    if (!r.bytes.empty())
      r.file = gguf::File::FromMemory(r.bytes.data(), r.bytes.size(), false, &err);
    return r;
  }();
  return v.file ? &*v.file : nullptr;
}

const gguf::File* FixtureVocab() {
  static std::optional<gguf::File> f = [] {
    gguf::Error err;
    return gguf::File::Open(kData + "/tiny-s1-q4km.gguf", &err);
  }();
  return f ? &*f : nullptr;
}

void BM_Encode(benchmark::State& state, const gguf::File* (*vocab)(), bool cache, bool nfc) {
  const gguf::File* file = vocab();
  if (!file) {
    state.SkipWithError("vocabulary not available");
    return;
  }
  TokenizerOptions options;
  options.nfc = nfc;
  options.cache_capacity = cache ? (1 << 16) : 0;
  auto tok = Tokenizer::FromGguf(*file, options);
  if (!tok.ok()) {
    state.SkipWithError(tok.status().ToString().c_str());
    return;
  }
  const std::string& text = Corpus();
  std::vector<int32_t> ids;
  for (auto _ : state) {
    ids.clear();
    (*tok)->Encode(text, SpecialTokens::kAll, &ids);
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(text.size()));
  state.counters["tokens"] = static_cast<double>(ids.size());
}

void BM_Decode(benchmark::State& state) {
  auto tok = Tokenizer::FromGguf(*RealVocab());
  if (!tok.ok()) {
    state.SkipWithError(tok.status().ToString().c_str());
    return;
  }
  const auto ids = (*tok)->Encode(Corpus(), true);
  for (auto _ : state) benchmark::DoNotOptimize((*tok)->Decode(ids, true));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(Corpus().size()));
}

BENCHMARK_CAPTURE(BM_Encode, real248k_cache_nfc, RealVocab, true, true)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Encode, real248k_nocache_nfc, RealVocab, false, true)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Encode, real248k_cache_nonfc, RealVocab, true, false)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Encode, fixture512_cache_nfc, FixtureVocab, true, true)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Decode)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace qwenrt

BENCHMARK_MAIN();

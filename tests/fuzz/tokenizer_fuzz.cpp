// libFuzzer target: the tokenizer of the tiny fixture (Qwen3.5 pre-tokenizer, NFC, byte-level
// BPE, special tokens) on arbitrary text. The first byte picks the options. Properties: no
// crash or UB; ids are in the vocabulary; without special-token parsing, decode(encode(x)) is
// NFC(x) for valid UTF-8 x (x itself in llama.cpp mode, no NFC); the streaming decoder emits the
// same text as Decode, and always valid UTF-8.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_util.h"
#include "qwenrt/gguf.hpp"
#include "text/tokenizer.h"

using namespace qwenrt;  // NOLINT: fuzz target

namespace {

struct Fixture {
  gguf::File file;
  std::unique_ptr<Tokenizer> nfc, peer;
};

const Fixture& GetFixture() {
  static const Fixture* f = [] {
    gguf::Error err;
    auto file = gguf::File::Open(std::string(QWENRT_TEST_DATA) + "/tiny-s1-q4km.gguf", &err);
    if (!file) {
      std::fprintf(stderr, "%s\n", err.ToString().c_str());
      __builtin_trap();
    }
    auto* fx = new Fixture{std::move(*file), nullptr, nullptr};
    TokenizerOptions o;
    fx->nfc = std::move(Tokenizer::FromGguf(fx->file, o).value());
    o.nfc = false;
    fx->peer = std::move(Tokenizer::FromGguf(fx->file, o).value());
    return fx;
  }();
  return *f;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const Fixture& fx = GetFixture();
  const uint8_t mode = data[0];
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  const Tokenizer& tok = (mode & 1) ? *fx.peer : *fx.nfc;
  const SpecialTokens special = (mode >> 1) % 3 == 0   ? SpecialTokens::kNone
                                : (mode >> 1) % 3 == 1 ? SpecialTokens::kUserDefined
                                                       : SpecialTokens::kAll;
  std::vector<int32_t> ids;
  tok.Encode(text, special, &ids);
  const int64_t V = static_cast<int64_t>(fx.file.Find("tokenizer.ggml.tokens")->size());
  for (int32_t id : ids) QWENRT_FUZZ_CHECK(id >= 0 && id < V, "token id out of range");
  const bool show_special = special != SpecialTokens::kNone;
  const std::string decoded = tok.Decode(ids, show_special);
  // Only for valid UTF-8: like llama.cpp, the tokenizer decodes leniently, so an encoded
  // surrogate or an overlong form (C0 80 -> NUL) comes back re-encoded, not as U+FFFD. The C API
  // refuses such text before it gets here.
  if (special == SpecialTokens::kNone && fuzz::IsValidUtf8(text)) {
    QWENRT_FUZZ_CHECK(fuzz::IsValidUtf8(decoded), "decode(encode(x)) is not UTF-8");
    if (tok.nfc()) {
      QWENRT_FUZZ_CHECK(decoded == unicode::NfcUtf8(text), "decode(encode(x)) != NFC(x)");
    } else {
      QWENRT_FUZZ_CHECK(decoded == text, "peer mode: decode(encode(x)) != x");
    }
  }
  StreamDecoder stream(tok, show_special);
  std::string streamed;
  for (int32_t id : ids) stream.Push(id, &streamed);
  stream.Flush(&streamed);
  QWENRT_FUZZ_CHECK(streamed == decoded || !fuzz::IsValidUtf8(decoded), "stream decoder");
  QWENRT_FUZZ_CHECK(fuzz::IsValidUtf8(streamed), "stream decoder emits invalid UTF-8");
  return 0;
}

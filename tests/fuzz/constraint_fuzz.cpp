// libFuzzer target: constraint compile and mask computation. The first byte picks the source kind
// (GBNF, JSON Schema, compact JSON Schema, regex) and how many tokens to walk; the rest is the
// source. What compiles is walked over the tiny fixture's vocabulary: compute the mask, take an
// allowed token (the input picks which), advance. Properties: no crash, hang or UB; errors are
// clean text naming the problem; a token is in the mask exactly when Accept takes it.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "chat/constraint/grammar.h"
#include "chat/constraint/json_schema.h"
#include "chat/constraint/matcher.h"
#include "chat/constraint/token_trie.h"
#include "fuzz_util.h"
#include "qwenrt/gguf.hpp"
#include "text/tokenizer.h"

using namespace qwenrt;  // NOLINT: fuzz target

namespace {

const std::shared_ptr<const TokenTrie>& Trie() {
  static const auto* trie = [] {
    gguf::Error err;
    auto file = gguf::File::Open(std::string(QWENRT_TEST_DATA) + "/tiny-s1-q4km.gguf", &err);
    if (!file) {
      std::fprintf(stderr, "%s\n", err.ToString().c_str());
      __builtin_trap();
    }
    auto tok = Tokenizer::FromGguf(*file);
    if (!tok.ok()) __builtin_trap();
    auto t = TokenTrie::Build(**tok);
    if (!t.ok()) __builtin_trap();
    return new std::shared_ptr<const TokenTrie>(*t);
  }();
  return *trie;
}

StatusOr<std::shared_ptr<const Grammar>> Compile(int kind, std::string_view text) {
  GrammarLimits limits;  // the defaults a host gets
  switch (kind) {
    case 0:
      return Grammar::FromGbnf(text, limits);
    case 1:
    case 2: {
      JsonSchemaOptions o;
      o.compact = kind == 2;
      return Grammar::FromJsonSchema(text, o);
    }
    default:
      return Grammar::FromRegex(text, limits);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const int kind = data[0] & 3;
  const int steps = (data[0] >> 2) & 15;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  StatusOr<std::shared_ptr<const Grammar>> g = Compile(kind, text);
  if (!g.ok()) {
    QWENRT_FUZZ_CHECK(g.status().code() == StatusCode::kInvalidArgument ||
                          g.status().code() == StatusCode::kOutOfMemory,
                      "compile errors are INVALID_ARGUMENT (or OUT_OF_MEMORY)");
    QWENRT_FUZZ_CHECK(fuzz::IsCleanText(g.status().message()), "error messages are clean text");
    return 0;
  }
  Matcher m(*g, Trie());
  std::vector<uint32_t> bits;
  uint32_t pick = size;  // which allowed token to take, varied by the input
  for (int s = 0; s < steps && !m.Done(); ++s) {
    m.FillMask(&bits);
    std::vector<int32_t> allowed;
    for (size_t w = 0; w < bits.size(); ++w) {
      for (uint32_t b = bits[w]; b != 0; b &= b - 1)
        allowed.push_back(static_cast<int32_t>(w * 32 + __builtin_ctz(b)));
    }
    if (allowed.empty()) break;
    pick = pick * 1103515245u + 12345u + data[(s % (size - 1)) + 1];
    const int32_t token = allowed[pick % allowed.size()];
    // A token outside the mask is refused (and leaves the matcher as it was: Accept's contract).
    const int32_t outside = static_cast<int32_t>(pick % (bits.size() * 32));
    if (!((bits[outside >> 5] >> (outside & 31)) & 1)) {
      QWENRT_FUZZ_CHECK(!m.Accept(outside), "a token outside the mask is refused");
    }
    QWENRT_FUZZ_CHECK(m.Accept(token), "a token in the mask is accepted");
  }
  return 0;
}

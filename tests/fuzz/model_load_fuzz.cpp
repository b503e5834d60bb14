// libFuzzer target: the whole model load from memory (GGUF parse -> config -> weight views ->
// deep tensor check -> fingerprint), then the tokenizer of the file, then a two-token forward
// pass with the scalar reference backend. Properties: no crash or UB; refusals carry a clean
// message; a model that loads can run (the views it validated are really in bounds).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "model/forward.h"
#include "model/kv_cache.h"
#include "model/model.h"
#include "model/recurrent_state.h"
#include "text/tokenizer.h"

using namespace qwenrt;  // NOLINT: fuzz target

namespace {

// The forward pass costs about one multiply-add per weight per token: skip models whose weights
// alone would make one input take more than a moment (their loading was still fuzzed).
constexpr uint64_t kMaxForwardWeightBytes = 16u << 20;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Model::LoadOptions options;
  options.check_tensors = size > 0 && (data[size - 1] & 1);
  StatusOr<std::shared_ptr<const Model>> m = Model::LoadFromMemory(data, size, options);
  if (!m.ok()) {
    QWENRT_FUZZ_CHECK(fuzz::IsCleanText(m.status().ToString()), "load error message");
    return 0;
  }
  const Model& model = **m;
  StatusOr<std::unique_ptr<Tokenizer>> tok = Tokenizer::FromGguf(model.gguf());
  std::vector<int32_t> ids = {0, static_cast<int32_t>(model.config().n_vocab - 1)};
  if (tok.ok()) {
    // Whatever the vocabulary, byte-level BPE keeps the bytes: decode(encode(x)) == NFC(x).
    const std::string text = "Hi <|im_start|>user\n\xC3\xA9 e\xCC\x81 123";
    std::vector<int32_t> enc = (*tok)->Encode(text, false);
    QWENRT_FUZZ_CHECK((*tok)->Decode(enc, false) == unicode::NfcUtf8(text), "round trip");
    for (int32_t id : enc) QWENRT_FUZZ_CHECK(id >= 0 && id < model.config().n_vocab, "token id");
    if (!enc.empty()) ids[0] = enc[0];
  } else {
    QWENRT_FUZZ_CHECK(fuzz::IsCleanText(tok.status().ToString()), "tokenizer error message");
  }
  uint64_t weight_bytes = 0;
  for (const gguf::TensorInfo& t : model.gguf().tensors()) weight_bytes += t.nbytes;
  if (weight_bytes > kMaxForwardWeightBytes) return 0;
  auto ctx = ForwardContext::Create(model, BackendKind::kRef, nullptr);
  auto kv = KvCache::Create(model.config(), /*max_tokens=*/4);
  auto rec = RecurrentState::Create(model.config());
  if (!ctx.ok() || !kv.ok() || !rec.ok()) return 0;  // e.g. out of memory for a huge shape
  std::vector<float> logits(2 * static_cast<size_t>(model.config().n_vocab));
  const Status st = Forward(**ctx, *kv, *rec, ids, /*all_logits=*/true, logits.data());
  QWENRT_FUZZ_CHECK(st.ok() || fuzz::IsCleanText(st.ToString()), "forward error message");
  return 0;
}

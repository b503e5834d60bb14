// Sampling params of the C ABI and the sampler built from them.
#include "sampling_capi.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "validate.h"

namespace qwenrt::capi {

Status ReadSamplingParams(const qwenrt_sampling_params* in, qwenrt_sampling_params* out) {
  QWENRT_RETURN_IF_ERROR(ReadParams(in, qwenrt_sampling_default_params(), out,
                                    {QWENRT_FIELD(qwenrt_sampling_params, temperature),
                                     QWENRT_FIELD(qwenrt_sampling_params, top_k),
                                     QWENRT_FIELD(qwenrt_sampling_params, top_p),
                                     QWENRT_FIELD(qwenrt_sampling_params, min_p),
                                     QWENRT_FIELD(qwenrt_sampling_params, repeat_penalty),
                                     QWENRT_FIELD(qwenrt_sampling_params, repeat_last_n),
                                     QWENRT_FIELD(qwenrt_sampling_params, presence_penalty),
                                     QWENRT_FIELD(qwenrt_sampling_params, frequency_penalty),
                                     QWENRT_FIELD(qwenrt_sampling_params, seed)},
                                    "sampling", "qwenrt_sampling_params"));
  const qwenrt_sampling_params& p = *out;
  if (!(p.temperature >= 0.0f) || !std::isfinite(p.temperature)) {
    return InvalidArgument("sampling->temperature {} must be >= 0 (0 = greedy)", p.temperature);
  }
  if (p.top_k < 0) return InvalidArgument("sampling->top_k {} must be >= 0 (0 = off)", p.top_k);
  if (!(p.top_p >= 0.0f && p.top_p <= 1.0f)) return InvalidArgument("sampling->top_p {} must be in [0, 1]", p.top_p);
  if (!(p.min_p >= 0.0f && p.min_p <= 1.0f)) return InvalidArgument("sampling->min_p {} must be in [0, 1]", p.min_p);
  if (!(p.repeat_penalty > 0.0f) || !std::isfinite(p.repeat_penalty)) {
    return InvalidArgument("sampling->repeat_penalty {} must be > 0 (1 = off)", p.repeat_penalty);
  }
  if (p.repeat_last_n < 0) return InvalidArgument("sampling->repeat_last_n {} must be >= 0", p.repeat_last_n);
  if (!std::isfinite(p.presence_penalty) || !std::isfinite(p.frequency_penalty)) {
    return InvalidArgument("sampling->presence_penalty / frequency_penalty must be finite");
  }
  return OkStatus();
}

StatusOr<SamplerFn> MakeSampler(const qwenrt_sampling_params& p, const Tokenizer& tokenizer,
                                std::span<const int32_t> history) {
  // TODO(capi): wire src/sampler.h (issue 4) when it lands; until then only greedy decoding.
  if (p.temperature != 0.0f || p.repeat_penalty != 1.0f || p.presence_penalty != 0.0f ||
      p.frequency_penalty != 0.0f) {
    return Unsupported("only greedy sampling (temperature 0, no penalties) is available in this build");
  }
  std::vector<int32_t> unused(tokenizer.unused_ids().begin(), tokenizer.unused_ids().end());
  std::sort(unused.begin(), unused.end());
  return SamplerFn([unused](const float* logits, int64_t n) -> int32_t {
    int64_t best = -1;
    for (int64_t i = 0; i < n; ++i) {
      if (std::binary_search(unused.begin(), unused.end(), static_cast<int32_t>(i))) continue;
      if (best < 0 || logits[i] > logits[best]) best = i;
    }
    return static_cast<int32_t>(best < 0 ? 0 : best);
  });
}

}  // namespace qwenrt::capi

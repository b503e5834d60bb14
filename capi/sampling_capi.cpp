// Sampling params of the C ABI and the sampler built from them.
#include "sampling_capi.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "chat/sampler.h"
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
                                std::span<const int32_t> history, std::shared_ptr<Status> error) {
  SamplerParams sp;
  sp.temperature = p.temperature;
  sp.top_k = p.top_k;
  sp.top_p = p.top_p;
  sp.min_p = p.min_p;
  sp.repetition_penalty = p.repeat_penalty;
  sp.presence_penalty = p.presence_penalty;
  sp.frequency_penalty = p.frequency_penalty;
  sp.penalty_last_n = p.repeat_last_n;
  sp.seed = p.seed;
  QWENRT_ASSIGN_OR_RETURN(Sampler created, Sampler::Create(sp, tokenizer.n_vocab()));
  auto sampler = std::make_shared<Sampler>(std::move(created));
  QWENRT_RETURN_IF_ERROR(sampler->SetBanned(tokenizer.unused_ids()));
  // The penalty window starts with the end of the transcript, as if those tokens had been sampled.
  size_t window = static_cast<size_t>(std::max(p.repeat_last_n, 0));
  size_t from = history.size() > window ? history.size() - window : 0;
  for (size_t i = from; i < history.size(); ++i) sampler->Accept(history[i]);
  return SamplerFn([sampler, error](const float* logits, int64_t n) -> int32_t {
    StatusOr<int32_t> tok = sampler->Sample(std::span<const float>(logits, static_cast<size_t>(n)));
    if (!tok.ok()) {
      *error = tok.status();
      return -1;  // Session::Generate stops on an invalid id; the caller reports *error
    }
    sampler->Accept(*tok);
    return *tok;
  });
}

}  // namespace qwenrt::capi

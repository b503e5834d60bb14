// Sampling params of the C ABI and their conversion to the core's.
#include "sampling_capi.h"

#include <cmath>

#include "params.h"
#include "validate.h"

namespace qwenrt::capi {

Status ReadSamplingParams(const qwenrt_sampling_params* in, qwenrt_sampling_params* out) {
  QWENRT_RETURN_IF_ERROR(ReadParams(
      in, DefaultSamplingParams(), out,
      {QWENRT_FIELD(qwenrt_sampling_params, temperature),
       QWENRT_FIELD(qwenrt_sampling_params, top_k), QWENRT_FIELD(qwenrt_sampling_params, top_p),
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
  if (!(p.top_p >= 0.0f && p.top_p <= 1.0f))
    return InvalidArgument("sampling->top_p {} must be in [0, 1]", p.top_p);
  if (!(p.min_p >= 0.0f && p.min_p <= 1.0f))
    return InvalidArgument("sampling->min_p {} must be in [0, 1]", p.min_p);
  if (!(p.repeat_penalty > 0.0f) || !std::isfinite(p.repeat_penalty)) {
    return InvalidArgument("sampling->repeat_penalty {} must be > 0 (1 = off)", p.repeat_penalty);
  }
  if (p.repeat_last_n < 0)
    return InvalidArgument("sampling->repeat_last_n {} must be >= 0", p.repeat_last_n);
  if (!std::isfinite(p.presence_penalty) || !std::isfinite(p.frequency_penalty)) {
    return InvalidArgument("sampling->presence_penalty / frequency_penalty must be finite");
  }
  return OkStatus();
}

SamplerParams ToSamplerParams(const qwenrt_sampling_params& p) {
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
  return sp;
}

}  // namespace qwenrt::capi

// Sampling params of the C ABI: reading `qwenrt_sampling_params` (struct_size rule, ranges) and
// converting them to the core's SamplerParams.
#pragma once

#include "base/status.h"
#include "chat/sampler.h"
#include "qwenrt/qwenrt.h"

namespace qwenrt::capi {

// NULL means greedy defaults. INVALID_ARGUMENT for a bad struct_size or out-of-range values
// (temperature < 0, top_p or min_p outside [0, 1], top_k < 0, penalties < 0, repeat_last_n < 0).
Status ReadSamplingParams(const qwenrt_sampling_params* in, qwenrt_sampling_params* out);

// The core's sampler parameters (src/chat/sampler.h) for checked C ones.
SamplerParams ToSamplerParams(const qwenrt_sampling_params& p);

}  // namespace qwenrt::capi

// Sampling params of the C ABI: reading `qwenrt_sampling_params` (struct_size rule, ranges) and
// building the Session's sampler from them.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "qwenrt/qwenrt.h"
#include "session/session.h"
#include "base/status.h"
#include "text/tokenizer.h"

namespace qwenrt::capi {

// NULL means greedy defaults. INVALID_ARGUMENT for a bad struct_size or out-of-range values
// (temperature < 0, top_p or min_p outside [0, 1], top_k < 0, penalties < 0, repeat_last_n < 0).
Status ReadSamplingParams(const qwenrt_sampling_params* in, qwenrt_sampling_params* out);

// A sampler for one generation (src/chat/sampler.h; reseeded with p.seed each time). `history` (the
// transcript) fills the penalty window. A sampling failure makes the function return -1 (which stops
// Session::Generate) and stores the reason in *error.
StatusOr<SamplerFn> MakeSampler(const qwenrt_sampling_params& p, const Tokenizer& tokenizer,
                                std::span<const int32_t> history, std::shared_ptr<Status> error);

}  // namespace qwenrt::capi

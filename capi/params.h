// The defaults of the C params structs: the one place the `*_init` functions, the readers of each
// struct and the ABI 1 by-value shims (compat_v1.cpp) take them from.
#pragma once

#include <cstddef>

#include "base/status.h"
#include "params_v1.h"
#include "qwenrt/qwenrt.h"

namespace qwenrt::capi {

// Today's structs with every default, struct_size = sizeof.
qwenrt_model_params DefaultModelParams();
qwenrt_session_params DefaultSessionParams();
qwenrt_memory_estimate_params DefaultMemoryEstimateParams();
qwenrt_sampling_params DefaultSamplingParams();
qwenrt_generate_params DefaultGenerateParams();
qwenrt_engine_params DefaultEngineParams();
qwenrt_chat DefaultChat();

// INVALID_ARGUMENT naming `what` unless `t` is QWENRT_KV_DEFAULT or a storage type (the kv_type
// field of the session and the memory-estimate params).
Status CheckKvTypeField(const qwenrt_kv_type& t, const char* what);

// The first (ABI 1) size of each struct: the smallest struct_size its init accepts, and the
// `since` of every field appended after it.
inline constexpr size_t kModelParamsV1Size = sizeof(ModelParamsV1);
inline constexpr size_t kSessionParamsV1Size = sizeof(SessionParamsV1);
inline constexpr size_t kSamplingParamsV1Size = sizeof(SamplingParamsV1);
inline constexpr size_t kGenerateParamsV1Size = sizeof(GenerateParamsV1);
inline constexpr size_t kEngineParamsV1Size = sizeof(EngineParamsV1);
inline constexpr size_t kChatV1Size = sizeof(ChatV1);
// The memory estimate params came in ABI 2; n_threads was appended to them later in ABI 2.
inline constexpr size_t kMemoryEstimateParamsV1Size =
    offsetof(qwenrt_memory_estimate_params, n_threads);

}  // namespace qwenrt::capi

// The layouts of the params structs as the first header (ABI 1) declared them. The library keeps
// exporting the ABI 1 by-value default functions with these layouts (compat_v1.cpp), and the size
// of each is the smallest struct_size a `*_init` function accepts and the `since` of the fields
// added later. Frozen: never edit a field here.
#pragma once

#include <cstddef>
#include <cstdint>

#include "qwenrt/qwenrt.h"

namespace qwenrt::capi {

struct ModelParamsV1 {
  uint32_t struct_size;
  bool check_tensors;
  qwenrt_progress_callback progress_callback;
  void* progress_user_data;
};

struct SessionParamsV1 {
  uint32_t struct_size;
  int32_t n_ctx;
  int32_t n_threads;
  qwenrt_backend backend;
  uint64_t checkpoint_budget;
  int32_t checkpoint_interval;
  qwenrt_history_mode history_mode;
  qwenrt_log_callback log_callback;
  void* log_user_data;
  bool split_invariant;
};

struct SamplingParamsV1 {
  uint32_t struct_size;
  float temperature;
  int32_t top_k;
  float top_p;
  float min_p;
  float repeat_penalty;
  int32_t repeat_last_n;
  float presence_penalty;
  float frequency_penalty;
  uint64_t seed;
};

struct GenerateParamsV1 {
  uint32_t struct_size;
  int32_t max_tokens;
  const char* const* stop_strings;
  size_t n_stop_strings;
  qwenrt_stream_callback callback;
  void* user_data;
};

struct EngineParamsV1 {
  uint32_t struct_size;
  int32_t n_threads;
  int32_t step_tokens;
  int32_t max_sessions;
};

struct ChatV1 {
  uint32_t struct_size;
  const qwenrt_message* messages;
  size_t n_messages;
  const char* tools_json;
  bool enable_thinking;
  bool add_generation_prompt;
};

struct ModelOptionsV1 {
  uint32_t struct_size;
  bool read_file;
  bool pack_weights;
  uint64_t template_max_bytes;
  uint64_t template_max_cost;
  uint64_t template_max_output_bytes;
  int32_t template_max_value_depth;
};

// Today's structs start with the ABI 1 fields at the same offsets (fields are only appended).
#define QWENRT_SAME_OFFSET(V1, T, f) static_assert(offsetof(V1, f) == offsetof(T, f), #T "." #f)
QWENRT_SAME_OFFSET(ModelParamsV1, qwenrt_model_params, progress_user_data);
QWENRT_SAME_OFFSET(ModelParamsV1, qwenrt_model_params, check_tensors);
QWENRT_SAME_OFFSET(SessionParamsV1, qwenrt_session_params, split_invariant);
QWENRT_SAME_OFFSET(SessionParamsV1, qwenrt_session_params, log_user_data);
QWENRT_SAME_OFFSET(SessionParamsV1, qwenrt_session_params, checkpoint_budget);
QWENRT_SAME_OFFSET(SamplingParamsV1, qwenrt_sampling_params, seed);
QWENRT_SAME_OFFSET(GenerateParamsV1, qwenrt_generate_params, user_data);
QWENRT_SAME_OFFSET(GenerateParamsV1, qwenrt_generate_params, n_stop_strings);
QWENRT_SAME_OFFSET(EngineParamsV1, qwenrt_engine_params, max_sessions);
QWENRT_SAME_OFFSET(ChatV1, qwenrt_chat, add_generation_prompt);
QWENRT_SAME_OFFSET(ModelOptionsV1, qwenrt_model_options, template_max_value_depth);
#undef QWENRT_SAME_OFFSET
static_assert(sizeof(SamplingParamsV1) == sizeof(qwenrt_sampling_params) &&
                  sizeof(EngineParamsV1) == sizeof(qwenrt_engine_params) &&
                  sizeof(ChatV1) == sizeof(qwenrt_chat) &&
                  sizeof(ModelOptionsV1) == sizeof(qwenrt_model_options),
              "these structs have not grown since ABI 1");
// Fields added in ABI 2 start past the ABI 1 struct, tail padding included (docs/c-abi.md, "Params
// structs": an older library checks only the bytes past its own size).
static_assert(offsetof(qwenrt_model_params, read_file) >= sizeof(ModelParamsV1));
static_assert(offsetof(qwenrt_generate_params, sampling) >= sizeof(GenerateParamsV1));
static_assert(offsetof(qwenrt_session_params, reserved_abi2) >= sizeof(SessionParamsV1));

}  // namespace qwenrt::capi

// The defaults of the C params structs and the check of their shared kv_type field (params.h).
#include "params.h"

#include "model/packed_weights.h"
#include "validate.h"

namespace qwenrt::capi {

qwenrt_model_params DefaultModelParams() {
  qwenrt_model_params p{};
  p.struct_size = sizeof(p);
  p.check_tensors = false;
  p.progress_callback = nullptr;
  p.progress_user_data = nullptr;
  p.read_file = false;
  p.pack_weights = PackWeightsByDefault();  // on where it is faster (model/packed_weights.h)
  p.template_max_bytes = 0;                 // 0 keeps each of the template engine's own limits
  p.template_max_cost = 0;
  p.template_max_output_bytes = 0;
  p.template_max_value_depth = 0;
  return p;
}

qwenrt_session_params DefaultSessionParams() {
  qwenrt_session_params p{};
  p.struct_size = sizeof(p);
  p.n_ctx = 0;
  p.n_threads = 0;
  p.backend = QWENRT_BACKEND_AUTO;
  p.checkpoint_budget = 0;
  p.checkpoint_interval = 0;
  p.history_mode = QWENRT_HISTORY_TEMPLATE;
  p.log_callback = nullptr;
  p.log_user_data = nullptr;
  p.split_invariant = true;
  p.reserved_abi2 = 0;
  p.kv_type = QWENRT_KV_DEFAULT;
  p.prefill_progress = nullptr;
  p.prefill_progress_user_data = nullptr;
  p.memory_limit = 0;
  p.max_draft = 0;
  return p;
}

qwenrt_memory_estimate_params DefaultMemoryEstimateParams() {
  qwenrt_memory_estimate_params p{};
  p.struct_size = sizeof(p);
  p.n_ctx = 0;
  p.kv_type = QWENRT_KV_DEFAULT;
  p.n_sessions = 1;
  p.checkpoint_budget = 0;
  p.n_threads = 0;
  return p;
}

qwenrt_sampling_params DefaultSamplingParams() {
  qwenrt_sampling_params p{};
  p.struct_size = sizeof(p);
  p.temperature = 0.0f;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.repeat_penalty = 1.0f;
  p.repeat_last_n = 64;
  p.presence_penalty = 0.0f;
  p.frequency_penalty = 0.0f;
  p.seed = 0;
  return p;
}

qwenrt_generate_params DefaultGenerateParams() {
  qwenrt_generate_params p{};
  p.struct_size = sizeof(p);
  p.max_tokens = 512;
  p.stop_strings = nullptr;
  p.n_stop_strings = 0;
  p.callback = nullptr;
  p.user_data = nullptr;
  p.sampling = nullptr;
  p.constraint = nullptr;
  p.tool_choice = QWENRT_TOOL_CHOICE_FREE;
  p.tool_function = nullptr;
  p.max_reasoning_tokens = 0;
  return p;
}

qwenrt_engine_params DefaultEngineParams() {
  qwenrt_engine_params p{};
  p.struct_size = sizeof(p);
  p.n_threads = 0;
  p.step_tokens = 512;
  p.max_sessions = 16;
  return p;
}

qwenrt_chat DefaultChat() {
  qwenrt_chat c{};
  c.struct_size = sizeof(c);
  c.messages = nullptr;
  c.n_messages = 0;
  c.tools_json = nullptr;
  c.enable_thinking = true;
  c.add_generation_prompt = true;
  return c;
}

Status CheckKvTypeField(const qwenrt_kv_type& t, const char* what) {
  if (int k = EnumValue(t); k < QWENRT_KV_DEFAULT || k > QWENRT_KV_Q8_0)
    return InvalidArgument("{} {} is not a qwenrt_kv_type", what, k);
  return OkStatus();
}

}  // namespace qwenrt::capi

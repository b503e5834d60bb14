// Exported C functions that need no model or session: status names, last error, versions and the
// default params. The model, session and chat shims live in model_capi.cpp, session_capi.cpp and
// chat_capi.cpp.
#include <string_view>

#include "guard.h"
#include "last_error.h"
#include "qwenrt/qwenrt.h"
#include "validate.h"

namespace {

#define QWENRT_CAPI_STR2(x) #x
#define QWENRT_CAPI_STR(x) QWENRT_CAPI_STR2(x)
constexpr std::string_view kHeaderVersion =
    QWENRT_CAPI_STR(QWENRT_VERSION_MAJOR) "." QWENRT_CAPI_STR(
        QWENRT_VERSION_MINOR) "." QWENRT_CAPI_STR(QWENRT_VERSION_PATCH);
static_assert(kHeaderVersion == QWENRT_VERSION_STRING,
              "QWENRT_VERSION_* in qwenrt.h must match project(VERSION) in CMakeLists.txt");

}  // namespace

extern "C" {

const char* qwenrt_status_string(qwenrt_status status) {
  switch (qwenrt::capi::EnumValue(status)) {  // any int may arrive from C
    case QWENRT_OK:
      return "OK";
    case QWENRT_INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case QWENRT_IO:
      return "IO";
    case QWENRT_BAD_FORMAT:
      return "BAD_FORMAT";
    case QWENRT_UNSUPPORTED:
      return "UNSUPPORTED";
    case QWENRT_OUT_OF_MEMORY:
      return "OUT_OF_MEMORY";
    case QWENRT_CONTEXT_FULL:
      return "CONTEXT_FULL";
    case QWENRT_BUFFER_TOO_SMALL:
      return "BUFFER_TOO_SMALL";
    case QWENRT_DEVICE:
      return "DEVICE";
    case QWENRT_CANCELLED:
      return "CANCELLED";
    case QWENRT_INTERNAL:
      return "INTERNAL";
  }
  return "UNKNOWN";
}

const char* qwenrt_last_error(void) { return qwenrt::capi::LastError(); }

const char* qwenrt_version(void) { return QWENRT_VERSION_STRING; }

int qwenrt_abi_version(void) { return QWENRT_ABI_VERSION; }

qwenrt_model_params qwenrt_model_default_params(void) {
  qwenrt_model_params p{};
  p.struct_size = sizeof(p);
  p.check_tensors = false;
  p.progress_callback = nullptr;
  p.progress_user_data = nullptr;
  return p;
}

qwenrt_session_params qwenrt_session_default_params(void) {
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
  return p;
}

qwenrt_sampling_params qwenrt_sampling_default_params(void) {
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

qwenrt_generate_params qwenrt_generate_default_params(void) {
  qwenrt_generate_params p{};
  p.struct_size = sizeof(p);
  p.max_tokens = 512;
  p.stop_strings = nullptr;
  p.n_stop_strings = 0;
  p.callback = nullptr;
  p.user_data = nullptr;
  return p;
}

qwenrt_chat qwenrt_chat_default(void) {
  qwenrt_chat c{};
  c.struct_size = sizeof(c);
  c.messages = nullptr;
  c.n_messages = 0;
  c.tools_json = nullptr;
  c.enable_thinking = true;
  c.add_generation_prompt = true;
  return c;
}

}  // extern "C"

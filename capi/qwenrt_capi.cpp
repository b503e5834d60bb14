// Exported C functions that need no model or session: status names, last error, versions and the
// params init functions (defaults in params.cpp). The model, session and chat shims live in
// model_capi.cpp, session_capi.cpp and chat_capi.cpp.
#include <string_view>

#include "guard.h"
#include "last_error.h"
#include "params.h"
#include "qwenrt/qwenrt.h"
#include "validate.h"

using namespace qwenrt::capi;  // NOLINT: shims only

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

qwenrt_status qwenrt_model_params_init(qwenrt_model_params* params) {
  return Guard(__func__, [&] {
    return InitParams(params, DefaultModelParams(), kModelParamsV1Size, "qwenrt_model_params");
  });
}

qwenrt_status qwenrt_session_params_init(qwenrt_session_params* params) {
  return Guard(__func__, [&] {
    return InitParams(params, DefaultSessionParams(), kSessionParamsV1Size,
                      "qwenrt_session_params");
  });
}

qwenrt_status qwenrt_memory_estimate_params_init(qwenrt_memory_estimate_params* params) {
  return Guard(__func__, [&] {
    return InitParams(params, DefaultMemoryEstimateParams(), kMemoryEstimateParamsV1Size,
                      "qwenrt_memory_estimate_params");
  });
}

qwenrt_status qwenrt_sampling_params_init(qwenrt_sampling_params* params) {
  return Guard(__func__, [&] {
    return InitParams(params, DefaultSamplingParams(), kSamplingParamsV1Size,
                      "qwenrt_sampling_params");
  });
}

qwenrt_status qwenrt_generate_params_init(qwenrt_generate_params* params) {
  return Guard(__func__, [&] {
    return InitParams(params, DefaultGenerateParams(), kGenerateParamsV1Size,
                      "qwenrt_generate_params");
  });
}

qwenrt_status qwenrt_engine_params_init(qwenrt_engine_params* params) {
  return Guard(__func__, [&] {
    return InitParams(params, DefaultEngineParams(), kEngineParamsV1Size, "qwenrt_engine_params");
  });
}

qwenrt_status qwenrt_chat_init(qwenrt_chat* chat) {
  return Guard(__func__,
               [&] { return InitParams(chat, DefaultChat(), kChatV1Size, "qwenrt_chat"); });
}

}  // extern "C"

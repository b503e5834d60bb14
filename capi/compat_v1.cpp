// The ABI 1 functions that returned params by value, kept exported with the ABI 1 layouts
// (params_v1.h) for hosts built against that header and FFI hosts that declared those layouts.
// Each cuts today's defaults (params.h) to the ABI 1 layout, which is what the init function
// writes for a struct_size of the ABI 1 size: one source of defaults. Today's header
// defines same-named inline functions instead (qwenrt.h, "Deprecated (ABI 1)"), hence
// QWENRT_NO_DEPRECATED_DEFAULTS here.
#define QWENRT_NO_DEPRECATED_DEFAULTS
#include <cstring>

#include "params.h"
#include "params_v1.h"
#include "qwenrt/qwenrt.h"

namespace qwenrt::capi {
namespace {

// Today's defaults cut to the ABI 1 layout V1 (a prefix of T with the same offsets).
template <typename V1, typename T>
V1 CutToV1(const T& defaults) {
  static_assert(sizeof(V1) <= sizeof(T));
  V1 v;
  std::memcpy(&v, &defaults, sizeof v);
  v.struct_size = sizeof v;
  return v;
}

}  // namespace
}  // namespace qwenrt::capi

using namespace qwenrt::capi;  // NOLINT: shims only

extern "C" {

// Declared here, not in qwenrt.h: today's header has inline functions of these names.
QWENRT_API ModelParamsV1 qwenrt_model_default_params(void);
QWENRT_API SessionParamsV1 qwenrt_session_default_params(void);
QWENRT_API SamplingParamsV1 qwenrt_sampling_default_params(void);
QWENRT_API GenerateParamsV1 qwenrt_generate_default_params(void);
QWENRT_API EngineParamsV1 qwenrt_engine_default_params(void);
QWENRT_API ChatV1 qwenrt_chat_default(void);

ModelParamsV1 qwenrt_model_default_params(void) {
  return CutToV1<ModelParamsV1>(DefaultModelParams());
}
SessionParamsV1 qwenrt_session_default_params(void) {
  return CutToV1<SessionParamsV1>(DefaultSessionParams());
}
SamplingParamsV1 qwenrt_sampling_default_params(void) {
  return CutToV1<SamplingParamsV1>(DefaultSamplingParams());
}
GenerateParamsV1 qwenrt_generate_default_params(void) {
  return CutToV1<GenerateParamsV1>(DefaultGenerateParams());
}
EngineParamsV1 qwenrt_engine_default_params(void) {
  return CutToV1<EngineParamsV1>(DefaultEngineParams());
}
ChatV1 qwenrt_chat_default(void) { return CutToV1<ChatV1>(DefaultChat()); }

}  // extern "C"

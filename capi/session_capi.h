// Helpers shared by the session and chat shims (session_capi.cpp, chat_capi.cpp): entering a call
// on a session handle (liveness, the one-thread rule, deferred free) and converting the core's
// report to the C struct.
#pragma once

#include "base/status.h"
#include "handles.h"

namespace qwenrt::capi {

// One shim call on a session handle. Enter() checks that the handle is live and that no other
// thread runs a call on it (INVALID_ARGUMENT otherwise); nested calls from the same thread (from
// inside a stream callback) pass through to the ChatSession, whose busy flag refuses the ones that
// would change it. A qwenrt_session_free made meanwhile is carried out when the last call leaves.
class SessionCall {
 public:
  explicit SessionCall(const qwenrt_session* s) : s_(s) {}
  ~SessionCall();
  Status Enter();

 private:
  const qwenrt_session* s_;
  bool entered_ = false;
};

#define QWENRT_CAPI_ENTER(session)   \
  SessionCall session_call(session); \
  QWENRT_RETURN_IF_ERROR(session_call.Enter())

// The C report of the last step.
qwenrt_report ToCReport(const TurnReport& r);

}  // namespace qwenrt::capi

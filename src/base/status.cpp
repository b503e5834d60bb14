// Names of status codes and the one-line rendering of a Status.
#include "base/status.h"

namespace qwenrt {

const char* StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "OK";
    case StatusCode::kInvalidArgument:
      return "INVALID_ARGUMENT";
    case StatusCode::kIo:
      return "IO";
    case StatusCode::kBadFormat:
      return "BAD_FORMAT";
    case StatusCode::kUnsupported:
      return "UNSUPPORTED";
    case StatusCode::kOutOfMemory:
      return "OUT_OF_MEMORY";
    case StatusCode::kContextFull:
      return "CONTEXT_FULL";
    case StatusCode::kBufferTooSmall:
      return "BUFFER_TOO_SMALL";
    case StatusCode::kDevice:
      return "DEVICE";
    case StatusCode::kCancelled:
      return "CANCELLED";
    case StatusCode::kInternal:
      return "INTERNAL";
  }
  return "UNKNOWN";
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  return std::string(StatusCodeName(code_)) + ": " + message_;
}

}  // namespace qwenrt

// Maps the std-only `gguf::Error` of the public header-only reader onto the library's `Status`,
// so loader code can write `return GgufStatus(err);`.
#pragma once

#include "base/status.h"
#include "qwenrt/gguf.hpp"

namespace qwenrt {

// kIo -> IO, kOutOfMemory -> OUT_OF_MEMORY, unsupported types and split files -> UNSUPPORTED,
// everything else (malformed files) -> BAD_FORMAT. The message keeps the gguf code name:
// "gguf BAD_OFFSET: tensor 'x': data offset 64, expected 32 ...".
inline Status GgufStatus(const gguf::Error& err) {
  StatusCode code = StatusCode::kBadFormat;
  switch (err.code) {
    case gguf::ErrorCode::kOk:
      return OkStatus();
    case gguf::ErrorCode::kIo:
      code = StatusCode::kIo;
      break;
    case gguf::ErrorCode::kOutOfMemory:
      code = StatusCode::kOutOfMemory;
      break;
    case gguf::ErrorCode::kUnsupportedType:
    case gguf::ErrorCode::kSplitFile:
      code = StatusCode::kUnsupported;
      break;
    default:
      break;
  }
  return Status(code, std::string("gguf ") + gguf::ErrorCodeName(err.code) + ": " + err.message);
}

}  // namespace qwenrt

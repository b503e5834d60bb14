// libFuzzer target: the GGUF reader on arbitrary bytes (borrowed, exact-size buffer, so ASan sees
// any read past the end). Properties: no crash or UB; a refused input gets a clean (UTF-8, no
// NUL) message; a parsed file only hands out in-bounds views; the typed getters and the deep data
// check never fail in any other way than with an Error.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "qwenrt/gguf.hpp"

using namespace qwenrt;  // NOLINT: fuzz target

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  for (bool strict : {true, false}) {
    gguf::ParseOptions options;
    options.require_supported_types = strict;
    options.require_contiguous_offsets = strict;
    gguf::Error err;
    std::optional<gguf::File> f = gguf::File::FromMemory(data, size, /*copy=*/false, &err, options);
    if (!f) {
      QWENRT_FUZZ_CHECK(err.code != gguf::ErrorCode::kOk, "refused without a code");
      QWENRT_FUZZ_CHECK(fuzz::IsCleanText(err.ToString()), "error message");
      continue;
    }
    const uint8_t* end = f->bytes() + f->size();
    for (const auto& [key, value] : f->metadata()) {
      QWENRT_FUZZ_CHECK(fuzz::IsCleanText(value.Describe()), "Describe");
      QWENRT_FUZZ_CHECK(f->Find(key) != nullptr, "Find of a listed key");
      gguf::Error e;
      uint32_t u32;
      std::string s;
      std::vector<int32_t> i32;
      std::vector<std::string_view> strs;
      std::vector<float> f32;
      if (!f->GetU32(key, &u32, &e))
        QWENRT_FUZZ_CHECK(fuzz::IsCleanText(e.ToString()), "getter message");
      f->GetString(key, &s, &e);
      f->GetI32Array(key, &i32, &e);
      f->GetF32Array(key, &f32, &e);
      if (f->GetStringArray(key, &strs, &e)) {
        for (std::string_view sv : strs) {
          QWENRT_FUZZ_CHECK(reinterpret_cast<const uint8_t*>(sv.data()) >= f->bytes() &&
                                reinterpret_cast<const uint8_t*>(sv.data()) + sv.size() <= end,
                            "string view out of bounds");
        }
      }
    }
    for (const gguf::TensorInfo& t : f->tensors()) {
      QWENRT_FUZZ_CHECK(t.data >= f->bytes() && t.nbytes <= static_cast<uint64_t>(end - t.data),
                        "tensor data out of bounds");
      QWENRT_FUZZ_CHECK(f->FindTensor(t.name) == &t, "FindTensor");
      gguf::Error e;
      if (strict && !gguf::CheckTensorData(t, &e)) {
        QWENRT_FUZZ_CHECK(fuzz::IsCleanText(e.ToString()), "tensor check message");
      }
    }
  }
  return 0;
}

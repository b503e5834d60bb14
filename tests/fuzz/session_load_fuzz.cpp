// libFuzzer target: loading a saved session from memory into a session of the micro fixture
// model (container checks, section parsing, transcript/KV/state/checkpoint restore). Properties:
// no crash or UB; a refused blob leaves the session exactly as it was (transcript, last logits)
// with a clean message; a loaded one is usable (one decode step works or fails cleanly). Each
// input is tried as it is and with its header's size and CRC-32 repaired, so that mutations get
// past the checksum to the section parsers.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "model/model.h"
#include "session/session.h"
#include "session/session_file.h"

using namespace qwenrt;  // NOLINT: fuzz target

namespace {

struct Fixture {
  std::shared_ptr<const Model> model;
  std::unique_ptr<Session> session;
  std::vector<uint8_t> pristine;  // the session's state before each input
};

Fixture& GetFixture() {
  static Fixture* f = [] {
    auto* fx = new Fixture;
    fx->model = Model::Load(std::string(QWENRT_TEST_DATA) + "/micro-s1-f32.gguf").value();
    SessionParams p;
    p.n_threads = 1;
    p.max_context = 64;
    p.initial_capacity = 8;
    fx->session = std::move(Session::Create(fx->model, p).value());
    const std::vector<int32_t> prompt = {1, 2, 3, 4, 5};
    FeedReport report;
    if (!fx->session->Feed(prompt, {}, &report).ok()) __builtin_trap();
    fx->pristine = fx->session->SaveToMemory().value();
    return fx;
  }();
  return *f;
}

void LoadOne(Fixture& fx, std::span<const uint8_t> bytes) {
  Session& s = *fx.session;
  const std::vector<int32_t> transcript = s.transcript();
  const std::vector<float> logits(s.last_logits().begin(), s.last_logits().end());
  std::vector<uint8_t> sampler_state;
  const Status st = s.LoadFromMemory(bytes, &sampler_state);
  if (!st.ok()) {
    QWENRT_FUZZ_CHECK(fuzz::IsCleanText(st.ToString()), "load error message");
    QWENRT_FUZZ_CHECK(s.transcript() == transcript, "a failed load changed the transcript");
    QWENRT_FUZZ_CHECK(
        s.last_logits().size() == logits.size() &&
            std::memcmp(s.last_logits().data(), logits.data(), logits.size() * sizeof(float)) == 0,
        "a failed load changed the logits");
    return;
  }
  if (s.size() < s.max_context()) {
    const Status d = s.DecodeStep(1);
    QWENRT_FUZZ_CHECK(d.ok() || fuzz::IsCleanText(d.ToString()), "decode error message");
  }
  // Back to the pristine state for the next input.
  if (!s.LoadFromMemory(fx.pristine).ok()) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Fixture& fx = GetFixture();
  LoadOne(fx, std::span<const uint8_t>(data, size));
  // Most mutations only break the header's size or CRC-32; with both repaired the same bytes
  // reach the section parsers and the state restore behind them.
  if (size >= 32) {
    std::vector<uint8_t> fixed(data, data + size);
    const uint64_t n = size;
    std::memcpy(fixed.data() + 16, &n, sizeof n);
    const uint32_t crc = Crc32(fixed.data() + 32, size - 32);
    std::memcpy(fixed.data() + 24, &crc, sizeof crc);
    LoadOne(fx, fixed);
  }
  return 0;
}

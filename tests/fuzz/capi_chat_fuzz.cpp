// libFuzzer target: the C API chat path on the tiny fixture, as a hostile host drives it. The input
// is fields separated by 0x1E: a flags byte, the tools JSON, then messages (first byte: the role;
// an assistant message's text may carry tool calls after 0x1F, as name 0x1D arguments-JSON pairs).
// Flags pick thinking, the generation prompt, whether tools are passed, a tool choice and whether
// a two-token chat turn runs after the render (prompts up to 160 bytes). Properties: no crash, hang
// or UB; every status is a documented one; the render and every error message are clean text; after
// any failure the session still answers (its tokens can be read and a plain turn succeeds).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_util.h"
#include "qwenrt/qwenrt.h"

using namespace qwenrt;  // NOLINT: fuzz target

namespace {

qwenrt_model* Model() {
  static qwenrt_model* m = [] {
    qwenrt_model* model = nullptr;
    if (qwenrt_model_load((std::string(QWENRT_TEST_DATA) + "/tiny-s1-q4km.gguf").c_str(), nullptr,
                          &model) != QWENRT_OK) {
      __builtin_trap();
    }
    return model;
  }();
  return m;
}

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == sep) {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  return out;
}

void CheckError(qwenrt_status st) {
  QWENRT_FUZZ_CHECK(st == QWENRT_OK || st == QWENRT_INVALID_ARGUMENT ||
                        st == QWENRT_OUT_OF_MEMORY || st == QWENRT_CONTEXT_FULL ||
                        st == QWENRT_BUFFER_TOO_SMALL,
                    qwenrt_status_string(st));
  if (st != QWENRT_OK)
    QWENRT_FUZZ_CHECK(fuzz::IsCleanText(qwenrt_last_error()), "error messages are clean text");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t flags = data[0];
  const std::vector<std::string_view> fields =
      Split(std::string_view(reinterpret_cast<const char*>(data + 1), size - 1), '\x1e');
  // Owned, NUL-terminated copies of every string the structs point at.
  std::vector<std::string> strings;
  strings.reserve(4 * fields.size() + 4);
  const auto keep = [&](std::string_view s) { return strings.emplace_back(s).c_str(); };

  std::vector<std::vector<qwenrt_tool_call>> calls(fields.size());
  std::vector<qwenrt_message> msgs;
  for (size_t i = 1; i < fields.size() && msgs.size() < 64; ++i) {
    if (fields[i].empty()) continue;
    qwenrt_message m{};
    m.struct_size = sizeof m;
    m.role = static_cast<qwenrt_role>(static_cast<uint8_t>(fields[i][0]) % 5);  // 4: not a role
    const std::vector<std::string_view> parts = Split(fields[i].substr(1), '\x1f');
    m.content = keep(parts[0]);
    for (size_t k = 1; k < parts.size() && k < 8; ++k) {
      const std::vector<std::string_view> nv = Split(parts[k], '\x1d');
      calls[i].push_back({keep(nv[0]), nv.size() > 1 ? keep(nv[1]) : nullptr});
    }
    m.tool_calls = calls[i].empty() ? nullptr : calls[i].data();
    m.n_tool_calls = calls[i].size();
    msgs.push_back(m);
  }
  if (msgs.empty()) return 0;
  qwenrt_chat chat;
  QWENRT_INIT(qwenrt_chat_init, &chat);
  chat.messages = msgs.data();
  chat.n_messages = msgs.size();
  chat.enable_thinking = flags & 1;
  chat.add_generation_prompt = flags & 2;
  if ((flags & 4) && !fields.empty()) chat.tools_json = keep(fields[0]);

  size_t needed = 0;
  std::vector<char> buf(4096);
  qwenrt_status st = qwenrt_chat_render(Model(), &chat, buf.data(), buf.size(), &needed);
  if (st == QWENRT_BUFFER_TOO_SMALL) {
    buf.resize(needed);
    st = qwenrt_chat_render(Model(), &chat, buf.data(), buf.size(), &needed);
  }
  CheckError(st);
  if (st == QWENRT_OK) {
    QWENRT_FUZZ_CHECK(fuzz::IsCleanText(buf.data()), "the render is clean text");
    QWENRT_FUZZ_CHECK(needed == std::string_view(buf.data()).size() + 1, "needed counts the NUL");
  }
  // The forward pass under coverage instrumentation costs ~35 ms a token here: turns only for
  // short prompts, so one input stays well inside the smoke run's 10 s per-input timeout.
  if (!(flags & 8) || st != QWENRT_OK || needed > 160) return 0;

  // A short turn: feed (prefix reuse, checkpoints), a tool choice compiled from the fuzzed tools,
  // two greedy tokens.
  qwenrt_session* s = nullptr;
  if (qwenrt_session_create(Model(), nullptr, &s) != QWENRT_OK) __builtin_trap();
  const qwenrt_tool_choice choice = static_cast<qwenrt_tool_choice>((flags >> 4) & 3);
  qwenrt_generate_params gen;
  QWENRT_INIT(qwenrt_generate_params_init, &gen);
  gen.max_tokens = 2;
  gen.tool_choice = choice;
  CheckError(qwenrt_session_chat(s, &chat, nullptr, &gen, nullptr));
  size_t n = 0;
  QWENRT_FUZZ_CHECK(qwenrt_session_get_tokens(s, nullptr, 0, &n) == QWENRT_OK || n > 0,
                    "tokens readable");
  // The session still works for a plain conversation after whatever happened.
  qwenrt_message plain{};
  plain.struct_size = sizeof plain;
  plain.role = QWENRT_ROLE_USER;
  plain.content = "hi";
  qwenrt_chat ok;
  QWENRT_INIT(qwenrt_chat_init, &ok);
  ok.messages = &plain;
  ok.n_messages = 1;
  gen.tool_choice = QWENRT_TOOL_CHOICE_FREE;
  QWENRT_FUZZ_CHECK(qwenrt_session_chat(s, &ok, nullptr, &gen, nullptr) == QWENRT_OK,
                    "a plain turn after any error");
  qwenrt_session_free(s);
  return 0;
}

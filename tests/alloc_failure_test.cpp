// Allocation-failure sweep: this test program replaces the global operator new with one that fails
// at the N-th call once armed, and runs tokenize, chat render, turn 2 of a chat fed to a session,
// generation, and a whole chat turn through the C API on the tiny fixture, for every N until the
// call needs no more allocations. Each call
// must return OK or QWENRT_OUT_OF_MEMORY, never crash, leak or corrupt anything (run it under
// ASan: scripts/sanitize.sh). After a failed feed the session must be exact: its transcript a
// prefix of the prompt (the C API's documented state after an error) and a retry without failure
// bit-identical to a run that never failed. The operator new here counts calls on every thread.
#include <atomic>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "quick_mode.h"
#include "qwenrt/qwenrt.h"

namespace {

std::atomic<long> g_calls{0};     // operator new calls since Arm()
std::atomic<long> g_fail_at{-1};  // the call that fails (1-based); -1 = disarmed
std::atomic<long> g_failed{0};    // failures injected since Arm()

bool ShouldFail() {
  const long at = g_fail_at.load(std::memory_order_relaxed);
  if (at < 0) return false;
  if (g_calls.fetch_add(1, std::memory_order_relaxed) + 1 != at) return false;
  g_failed.fetch_add(1, std::memory_order_relaxed);
  return true;
}
void* Alloc(std::size_t n) noexcept { return ShouldFail() ? nullptr : std::malloc(n ? n : 1); }
void* AllocAligned(std::size_t n, std::align_val_t a) noexcept {
  if (ShouldFail()) return nullptr;
  const std::size_t al = static_cast<std::size_t>(a);
  return std::aligned_alloc(al, (n + al - 1) / al * al);
}

void Arm(long n) {
  g_calls = 0;
  g_failed = 0;
  g_fail_at = n;
}
void Disarm() { g_fail_at = -1; }

}  // namespace

// GCC sees these replacements inlined into std::allocator and takes the free() in operator delete
// for a mismatch with operator new; both are replaced here, so the pairing is right.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

void* operator new(std::size_t n) {
  if (void* p = Alloc(n)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) {
  if (void* p = Alloc(n)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return Alloc(n); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return Alloc(n); }
void* operator new(std::size_t n, std::align_val_t a) {
  if (void* p = AllocAligned(n, a)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n, std::align_val_t a) {
  if (void* p = AllocAligned(n, a)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return AllocAligned(n, a);
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return AllocAligned(n, a);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }

namespace {

const std::string kModel = std::string(QWENRT_TEST_DATA) + "/tiny-s1-q4km.gguf";

struct Model {
  qwenrt_model* m = nullptr;
  Model() { REQUIRE(qwenrt_model_load(kModel.c_str(), nullptr, &m) == QWENRT_OK); }
  ~Model() { qwenrt_model_free(m); }
};

std::vector<qwenrt_message> Conversation(int turns) {
  std::vector<qwenrt_message> msgs;
  const auto add = [&](qwenrt_role role, const char* text) {
    qwenrt_message m{};
    m.struct_size = sizeof(qwenrt_message);
    m.role = role;
    m.content = text;
    msgs.push_back(m);
  };
  add(QWENRT_ROLE_SYSTEM, "You are terse.");
  add(QWENRT_ROLE_USER, "Hello! Who are you? Caf\xC3\xA9 \xE4\xB8\xAD");
  if (turns > 1) {
    add(QWENRT_ROLE_ASSISTANT, "A test model.");
    add(QWENRT_ROLE_USER, "Tell me more.");
  }
  return msgs;
}

qwenrt_chat Chat(const std::vector<qwenrt_message>& msgs) {
  qwenrt_chat c;
  REQUIRE(QWENRT_INIT(qwenrt_chat_init, &c) == QWENRT_OK);
  c.messages = msgs.data();
  c.n_messages = msgs.size();
  return c;
}

std::vector<int32_t> Tokens(qwenrt_session* s) {
  size_t n = 0;
  qwenrt_session_get_tokens(s, nullptr, 0, &n);
  std::vector<int32_t> t(n);
  REQUIRE(qwenrt_session_get_tokens(s, t.data(), t.size(), &n) == QWENRT_OK);
  return t;
}

std::vector<float> Logits(qwenrt_session* s) {
  const float* p = nullptr;
  size_t n = 0;
  REQUIRE(qwenrt_session_get_logits(s, &p, &n) == QWENRT_OK);
  return std::vector<float>(p, p + n);
}

bool IsPrefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  return a.size() <= b.size() && std::equal(a.begin(), a.end(), b.begin());
}

// Calls `fn` with the N-th allocation failing for N = 1, 2, ... until a run injects no failure;
// `check(status)` judges each run. Returns the number of allocations of a clean run. In quick mode
// (the sanitizer run, tests/quick_mode.h) N = 1, 8, 15, ...: a seventh of the failure points,
// spread over the whole call; the plain ctest sweeps every one. The count returned is then rounded
// up to the next point swept.
template <typename Fn, typename Check>
long Sweep(Fn fn, Check check) {
  const long stride = qwenrt::testing::QuickMode() ? 7 : 1;
  for (long n = 1;; n += stride) {
    Arm(n);
    const qwenrt_status st = fn();
    Disarm();
    const bool injected = g_failed > 0;
    INFO("allocation " << n << ": " << qwenrt_status_string(st) << ": " << qwenrt_last_error());
    if (injected) {
      REQUIRE((st == QWENRT_OUT_OF_MEMORY || st == QWENRT_OK));  // OK: the failure was absorbed
    } else {
      REQUIRE(st == QWENRT_OK);
    }
    check(st, n);
    if (!injected) return n - 1;
  }
}

TEST_CASE("tokenize and render: every allocation failure is OUT_OF_MEMORY", "[alloc]") {
  Model model;
  const std::string text =
      "<|im_start|>user\nHello, world! e\xCC\x81 \xE4\xB8\xAD\xE6\x96\x87 12345<|im_end|>";
  std::vector<int32_t> want(256);
  size_t n_want = 0;
  REQUIRE(qwenrt_tokenize(model.m, text.data(), text.size(), true, want.data(), want.size(),
                          &n_want) == QWENRT_OK);
  want.resize(n_want);
  std::vector<int32_t> got(256);
  const long n_tok = Sweep(
      [&] {
        size_t n = 0;
        return qwenrt_tokenize(model.m, text.data(), text.size(), true, got.data(), got.size(), &n);
      },
      [&](qwenrt_status st, long) {
        if (st == QWENRT_OK) CHECK(std::vector<int32_t>(got.begin(), got.begin() + n_want) == want);
      });

  WARN("allocations: tokenize " << n_tok);
  CHECK(n_tok > 0);
}

// This sweep found the render path building the messages as a nlohmann::json document, whose
// destructor allocates (and terminates when that fails: see "[tools-oom]" below); the messages are
// now built as template values (MessagesValue).
TEST_CASE("chat render: every allocation failure is OUT_OF_MEMORY", "[alloc][render-oom]") {
  Model model;
  const auto msgs = Conversation(2);
  const qwenrt_chat chat = Chat(msgs);
  std::vector<char> ref(8192), out(8192);
  size_t needed = 0;
  REQUIRE(qwenrt_chat_render(model.m, &chat, ref.data(), ref.size(), &needed) == QWENRT_OK);
  const long n_render =
      Sweep([&] { return qwenrt_chat_render(model.m, &chat, out.data(), out.size(), &needed); },
            [&](qwenrt_status st, long) {
              if (st == QWENRT_OK) CHECK(std::strcmp(out.data(), ref.data()) == 0);
            });
  WARN("allocations: render " << n_render);
  CHECK(n_render > 0);
}

// Turn 2 of a chat fed as tokens (qwenrt_session_feed_chat goes through the request JSON, see
// above), on a session holding turn 1: prefix reuse, checkpoint restore, prefill. This sweep found
// Session::Run appending to the transcript after the forward pass had advanced the state (a
// bad_alloc there left a state one ubatch ahead of its transcript); the room is now made first.
TEST_CASE("a two-turn chat feed: every allocation failure is OUT_OF_MEMORY and the session exact",
          "[alloc][session-oom]") {
  Model model;
  qwenrt_session_params p;
  REQUIRE(QWENRT_INIT(qwenrt_session_params_init, &p) == QWENRT_OK);
  p.n_threads = 1;
  p.n_ctx = 512;
  p.backend = QWENRT_BACKEND_CPU;
  const auto turn1 = Conversation(1), turn2 = Conversation(2);
  const qwenrt_chat chat1 = Chat(turn1), chat2 = Chat(turn2);
  qwenrt_report report{};
  report.struct_size = sizeof report;

  // Reference: turn 1, then turn 2, never failing.
  qwenrt_session* ref = nullptr;
  REQUIRE(qwenrt_session_create(model.m, &p, &ref) == QWENRT_OK);
  REQUIRE(qwenrt_session_feed_chat(ref, &chat1, &report) == QWENRT_OK);
  const std::vector<int32_t> tokens1 = Tokens(ref);
  std::vector<uint8_t> saved(1 << 24);
  size_t saved_n = 0;
  REQUIRE(qwenrt_session_save_memory(ref, saved.data(), saved.size(), &saved_n) == QWENRT_OK);
  REQUIRE(qwenrt_session_feed_chat(ref, &chat2, &report) == QWENRT_OK);
  const std::vector<int32_t> tokens2 = Tokens(ref);
  const std::vector<float> logits2 = Logits(ref);
  qwenrt_session_free(ref);

  qwenrt_session* s = nullptr;
  REQUIRE(qwenrt_session_create(model.m, &p, &s) == QWENRT_OK);
  long unchanged = 0, advanced = 0;
  const long n_feed = Sweep(
      [&] {
        // Restore turn 1 (not part of the sweep), then fail inside turn 2's feed.
        const long n = g_fail_at.exchange(-1);
        REQUIRE(qwenrt_session_load_memory(s, saved.data(), saved_n) == QWENRT_OK);
        Arm(n);
        return qwenrt_session_feed(s, tokens2.data(), tokens2.size(), &report);
      },
      [&](qwenrt_status st, long) {
        const std::vector<int32_t> t = Tokens(s);
        if (st != QWENRT_OK) {
          // The documented state after an error: an exact prefix of the prompt.
          REQUIRE((IsPrefix(t, tokens2) || t == tokens1));
          (t == tokens1 ? unchanged : advanced)++;
          REQUIRE(qwenrt_session_feed(s, tokens2.data(), tokens2.size(), &report) ==
                  QWENRT_OK);  // retry
        }
        REQUIRE(Tokens(s) == tokens2);
        const std::vector<float> l = Logits(s);
        REQUIRE(std::memcmp(l.data(), logits2.data(), l.size() * sizeof(float)) == 0);
      });
  qwenrt_session_free(s);
  WARN("turn-2 feed: " << n_feed << " allocations; after a failure the session was unchanged "
                       << unchanged << " times, an exact longer prefix " << advanced << " times");
  CHECK(n_feed > 0);
}

// Generation after turn 2's feed: sampling, streaming, decoding, one token at a time. After a
// failure the session must hold a prefix of what a clean run generates, with exact state: feeding
// the clean run's whole transcript then computes nothing new and gives its logits.
TEST_CASE("generation: every allocation failure is OUT_OF_MEMORY and the session exact",
          "[alloc][generate-oom]") {
  Model model;
  qwenrt_session_params p;
  REQUIRE(QWENRT_INIT(qwenrt_session_params_init, &p) == QWENRT_OK);
  p.n_threads = 1;
  p.n_ctx = 512;
  p.backend = QWENRT_BACKEND_CPU;
  const auto turn2 = Conversation(2);
  const qwenrt_chat chat2 = Chat(turn2);
  qwenrt_report report{};
  report.struct_size = sizeof report;
  qwenrt_generate_params gp;
  REQUIRE(QWENRT_INIT(qwenrt_generate_params_init, &gp) == QWENRT_OK);
  gp.max_tokens = 12;

  qwenrt_session* ref = nullptr;
  REQUIRE(qwenrt_session_create(model.m, &p, &ref) == QWENRT_OK);
  REQUIRE(qwenrt_session_feed_chat(ref, &chat2, &report) == QWENRT_OK);
  const std::vector<int32_t> prompt = Tokens(ref);
  std::vector<uint8_t> saved(1 << 24);
  size_t saved_n = 0;
  REQUIRE(qwenrt_session_save_memory(ref, saved.data(), saved.size(), &saved_n) == QWENRT_OK);
  REQUIRE(qwenrt_session_generate(ref, nullptr, &gp, nullptr) == QWENRT_OK);
  const std::vector<int32_t> full = Tokens(ref);
  const std::vector<float> logits = Logits(ref);
  qwenrt_session_free(ref);
  REQUIRE(full.size() > prompt.size());

  qwenrt_session* s = nullptr;
  REQUIRE(qwenrt_session_create(model.m, &p, &s) == QWENRT_OK);
  long failed_midway = 0;
  const long n_gen = Sweep(
      [&] {
        const long n = g_fail_at.exchange(-1);
        REQUIRE(qwenrt_session_load_memory(s, saved.data(), saved_n) == QWENRT_OK);
        Arm(n);
        return qwenrt_session_generate(s, nullptr, &gp, nullptr);
      },
      [&](qwenrt_status st, long) {
        const std::vector<int32_t> t = Tokens(s);
        REQUIRE(IsPrefix(prompt, t));
        REQUIRE(IsPrefix(t, full));
        if (st != QWENRT_OK) {
          if (t.size() > prompt.size()) ++failed_midway;
          REQUIRE(qwenrt_session_feed(s, full.data(), full.size(), &report) == QWENRT_OK);
        }
        REQUIRE(Tokens(s) == full);
        const std::vector<float> l = Logits(s);
        REQUIRE(std::memcmp(l.data(), logits.data(), l.size() * sizeof(float)) == 0);
      });
  qwenrt_session_free(s);
  WARN("generation: " << n_gen << " allocations; " << failed_midway
                      << " failures after some tokens");
  CHECK(n_gen > 0);
}

// A whole chat turn through the one chat call (render, feed, generate, stream, report) on a
// session holding turn 1, with or without tools. After a failure the session must hold an exact
// prefix of what a clean turn leaves (the turn-1 state, or the prompt plus some reply), and a
// retry of the turn must give the clean turn's reply and logits.
void SweepChatTurn(const char* tools_json) {
  Model model;
  qwenrt_session_params p;
  REQUIRE(QWENRT_INIT(qwenrt_session_params_init, &p) == QWENRT_OK);
  p.n_threads = 1;
  p.n_ctx = 2048;
  p.backend = QWENRT_BACKEND_CPU;
  const auto turn1 = Conversation(1), turn2 = Conversation(2);
  qwenrt_chat chat1 = Chat(turn1), chat2 = Chat(turn2);
  chat1.tools_json = chat2.tools_json = tools_json;
  qwenrt_report report{};
  report.struct_size = sizeof report;
  qwenrt_generate_params gp;
  REQUIRE(QWENRT_INIT(qwenrt_generate_params_init, &gp) == QWENRT_OK);
  gp.max_tokens = 8;

  qwenrt_session* ref = nullptr;
  REQUIRE(qwenrt_session_create(model.m, &p, &ref) == QWENRT_OK);
  REQUIRE(qwenrt_session_chat(ref, &chat1, nullptr, &gp, &report) == QWENRT_OK);
  const std::vector<int32_t> tokens1 = Tokens(ref);
  std::vector<uint8_t> saved(1 << 24);
  size_t saved_n = 0;
  REQUIRE(qwenrt_session_save_memory(ref, saved.data(), saved.size(), &saved_n) == QWENRT_OK);
  REQUIRE(qwenrt_session_chat(ref, &chat2, nullptr, &gp, &report) == QWENRT_OK);
  const std::vector<int32_t> tokens2 = Tokens(ref);
  const std::vector<float> logits2 = Logits(ref);
  qwenrt_session_free(ref);

  qwenrt_session* s = nullptr;
  REQUIRE(qwenrt_session_create(model.m, &p, &s) == QWENRT_OK);
  const long n_chat = Sweep(
      [&] {
        const long n = g_fail_at.exchange(-1);
        REQUIRE(qwenrt_session_load_memory(s, saved.data(), saved_n) == QWENRT_OK);
        Arm(n);
        return qwenrt_session_chat(s, &chat2, nullptr, &gp, &report);
      },
      [&](qwenrt_status st, long) {
        if (st != QWENRT_OK) {
          const std::vector<int32_t> t = Tokens(s);
          REQUIRE((IsPrefix(t, tokens2) || t == tokens1));
          REQUIRE(qwenrt_session_load_memory(s, saved.data(), saved_n) == QWENRT_OK);
          REQUIRE(qwenrt_session_chat(s, &chat2, nullptr, &gp, &report) == QWENRT_OK);  // retry
        }
        REQUIRE(Tokens(s) == tokens2);
        const std::vector<float> l = Logits(s);
        REQUIRE(std::memcmp(l.data(), logits2.data(), l.size() * sizeof(float)) == 0);
      });
  qwenrt_session_free(s);
  WARN("chat turn 2" << (tools_json ? " with tools" : "") << ": " << n_chat << " allocations");
  CHECK(n_chat > 0);
}

TEST_CASE("a chat turn: every allocation failure is OUT_OF_MEMORY and the session exact",
          "[alloc][chat-oom]") {
  SweepChatTurn(nullptr);
}

// With tools the request holds JSON documents (the parsed tools_json, tool-call arguments): this
// sweep found nlohmann::json allocating inside its noexcept destructor (it terminated the host when
// that allocation failed), which is why the library has its own JSON type (src/text/json.h).
TEST_CASE("a chat turn with tools: every allocation failure is OUT_OF_MEMORY",
          "[alloc][tools-oom]") {
  SweepChatTurn(R"([{"type": "function", "function": {"name": "get_weather", "parameters": )"
                R"({"type": "object", "properties": {"city": {"type": "string"}}}}}])");
}

// A JSON Schema compile (parse, $ref resolution, allOf merging, the GBNF and its automaton): each
// failure is OUT_OF_MEMORY, each success a usable constraint.
TEST_CASE("a JSON Schema compile: every allocation failure is OUT_OF_MEMORY",
          "[alloc][schema-oom]") {
  const std::string schema =
      R"({"$defs": {"pos": {"type": "integer", "minimum": 1, "maximum": 120}},
    "type": "object", "additionalProperties": false, "required": ["name", "age"],
    "properties": {"name": {"type": "string", "maxLength": 12}, "age": {"$ref": "#/$defs/pos"},
      "tags": {"type": "array", "items": {"enum": ["a", "b", 3, null]}, "maxItems": 3},
      "when": {"type": "string", "format": "date"},
      "kind": {"anyOf": [{"const": "x"}, {"type": "number"}]},
      "both": {"allOf": [{"type": "object", "properties": {"p": {"type": "boolean"}}}, {"required": ["p"]}]}}})";
  const long n = Sweep(
      [&] {
        qwenrt_constraint* c = nullptr;
        const qwenrt_status st = qwenrt_constraint_compile(QWENRT_CONSTRAINT_JSON_SCHEMA,
                                                           schema.data(), schema.size(), &c);
        if (st == QWENRT_OK) {
          REQUIRE(c != nullptr);
        } else {
          REQUIRE(c == nullptr);
        }
        qwenrt_constraint_free(c);
        return st;
      },
      [](qwenrt_status, long) {});
  WARN("allocations: schema compile " << n);
  CHECK(n > 0);
}

}  // namespace

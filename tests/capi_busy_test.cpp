// The session handle's busy rule through the C ABI (issue: hostile callers): a call on a session
// from inside its own stream callback, or from a second thread while a call runs, is refused with
// QWENRT_INVALID_ARGUMENT and changes nothing; qwenrt_session_free from inside the callback is
// carried out when the running call returns; qwenrt_session_cancel never races a free. Run under
// ASan/TSan by scripts/test.sh.
#include <atomic>
#include <catch2/catch.hpp>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "qwenrt/qwenrt.h"

namespace {

const std::string kModel = std::string(QWENRT_TEST_DATA) + "/tiny-s1-q4km.gguf";

qwenrt_model* LoadModel() {
  qwenrt_model* m = nullptr;
  REQUIRE(qwenrt_model_load(kModel.c_str(), nullptr, &m) == QWENRT_OK);
  return m;
}

qwenrt_session* NewSession(qwenrt_model* m) {
  qwenrt_session_params p;
  REQUIRE(QWENRT_INIT(qwenrt_session_params_init, &p) == QWENRT_OK);
  p.backend = QWENRT_BACKEND_CPU;
  p.n_threads = 1;
  qwenrt_session* s = nullptr;
  REQUIRE(qwenrt_session_create(m, &p, &s) == QWENRT_OK);
  return s;
}

struct Chat {
  qwenrt_message msg{};
  qwenrt_chat chat;
  qwenrt_sampling_params sampling;
  Chat() {
    REQUIRE(QWENRT_INIT(qwenrt_chat_init, &chat) == QWENRT_OK);
    REQUIRE(QWENRT_INIT(qwenrt_sampling_params_init, &sampling) == QWENRT_OK);
    msg.struct_size = sizeof msg;
    msg.role = QWENRT_ROLE_USER;
    msg.content = "Hello there";
    chat.messages = &msg;
    chat.n_messages = 1;
    // The fixture's weights are random and favour "\n" hugely: penalties make the reply text.
    sampling.temperature = 10.0f;
    sampling.presence_penalty = 50.0f;
    sampling.frequency_penalty = 50.0f;
    sampling.seed = 3;
  }
};

struct Nested {
  qwenrt_session* s;
  const qwenrt_chat* chat;
  std::vector<qwenrt_status> statuses;
  std::vector<std::string> errors;
  bool free_it = false;
  int pieces = 0;
};

void Record(Nested* n, qwenrt_status st) {
  n->statuses.push_back(st);
  n->errors.emplace_back(qwenrt_last_error());
}

bool NestedCalls(qwenrt_piece_kind, const char*, size_t, void* user) {
  auto* n = static_cast<Nested*>(user);
  if (n->pieces++ > 0) return true;
  if (n->free_it) {
    qwenrt_session_free(n->s);  // deferred: the running chat finishes first
    size_t len = 0;
    Record(n,
           qwenrt_session_get_tokens(n->s, nullptr, 0, &len));  // the handle is gone for new calls
    return true;
  }
  Record(n, qwenrt_session_chat(n->s, n->chat, nullptr, nullptr, nullptr));
  Record(n, qwenrt_session_feed_chat(n->s, n->chat, nullptr));
  Record(n, qwenrt_session_reset(n->s));
  int32_t tok = 1;
  Record(n, qwenrt_session_feed(n->s, &tok, 1, nullptr));
  Record(n, qwenrt_session_load_file(n->s, "/nonexistent"));
  qwenrt_session* fork = nullptr;
  Record(n, qwenrt_session_fork(n->s, &fork));
  // Reading is allowed from the callback's own thread.
  size_t len = 0;
  n->statuses.push_back(qwenrt_session_get_tokens(n->s, nullptr, 0, &len) ==
                                    QWENRT_BUFFER_TOO_SMALL ||
                                qwenrt_session_get_tokens(n->s, nullptr, 0, &len) == QWENRT_OK
                            ? QWENRT_OK
                            : QWENRT_INTERNAL);
  n->errors.emplace_back("read");
  return true;
}

// A chat on `s` whose stream callback runs NestedCalls.
qwenrt_status ChatWithNestedCalls(qwenrt_session* s, Chat& c, Nested& n) {
  qwenrt_generate_params gp;
  REQUIRE(QWENRT_INIT(qwenrt_generate_params_init, &gp) == QWENRT_OK);
  gp.max_tokens = 48;
  gp.callback = NestedCalls;
  gp.user_data = &n;
  return qwenrt_session_chat(s, &c.chat, &c.sampling, &gp, nullptr);
}

TEST_CASE("calls from inside the stream callback are refused and change nothing", "[capi]") {
  qwenrt_model* m = LoadModel();
  qwenrt_session* s = NewSession(m);
  Chat c;
  Nested n{s, &c.chat, {}, {}};
  REQUIRE(ChatWithNestedCalls(s, c, n) == QWENRT_OK);
  REQUIRE(n.statuses.size() == 7);
  for (size_t i = 0; i < 6; ++i) {
    INFO(n.errors[i]);
    CHECK(n.statuses[i] == QWENRT_INVALID_ARGUMENT);
    CHECK(n.errors[i].find("busy") != std::string::npos);
  }
  CHECK(n.statuses[6] == QWENRT_OK);
  // The session holds the prompt and the reply, untouched by the refused calls.
  qwenrt_report r{};
  r.struct_size = sizeof r;
  REQUIRE(qwenrt_session_get_report(s, &r) == QWENRT_OK);
  CHECK(qwenrt_session_n_tokens(s) == r.prompt_tokens + r.generated_tokens);
  qwenrt_session_free(s);
  qwenrt_model_free(m);
}

TEST_CASE("qwenrt_session_free from inside the callback takes effect when the call returns",
          "[capi]") {
  qwenrt_model* m = LoadModel();
  qwenrt_session* s = NewSession(m);
  Chat c;
  Nested n{s, &c.chat, {}, {}};
  n.free_it = true;
  CHECK(ChatWithNestedCalls(s, c, n) == QWENRT_OK);
  REQUIRE(n.statuses.size() == 1);
  CHECK(n.statuses[0] == QWENRT_INVALID_ARGUMENT);  // freed for every new call
  CHECK(qwenrt_session_n_tokens(s) == -1);  // and after the call: gone (ASan: no leak, no UAF)
  qwenrt_model_free(m);
}

struct Slow {
  std::atomic<bool> started{false};
  std::atomic<bool> release{false};
};

bool SlowPieces(qwenrt_piece_kind, const char*, size_t, void* user) {
  auto* s = static_cast<Slow*>(user);
  s->started.store(true);
  while (!s->release.load()) std::this_thread::yield();
  return false;  // stop after the first piece
}

TEST_CASE("a second thread is refused while a call runs; cancel is allowed", "[capi]") {
  qwenrt_model* m = LoadModel();
  qwenrt_session* s = NewSession(m);
  Chat c;
  Slow slow;
  qwenrt_generate_params gp;
  REQUIRE(QWENRT_INIT(qwenrt_generate_params_init, &gp) == QWENRT_OK);
  gp.max_tokens = 64;
  gp.callback = SlowPieces;
  gp.user_data = &slow;
  std::atomic<qwenrt_status> chat_status{QWENRT_INTERNAL};
  std::atomic<bool> done{false};
  std::thread runner([&] {
    chat_status = qwenrt_session_chat(s, &c.chat, &c.sampling, &gp, nullptr);
    done.store(true);
  });
  while (!slow.started.load() && !done.load()) std::this_thread::yield();
  if (!slow.started.load()) {
    runner.join();
    FAIL("the chat streamed no piece: " << qwenrt_status_string(chat_status.load()));
  }
  size_t len = 0;
  CHECK(qwenrt_session_get_tokens(s, nullptr, 0, &len) == QWENRT_INVALID_ARGUMENT);
  CHECK(std::string(qwenrt_last_error()).find("busy") != std::string::npos);
  CHECK(qwenrt_session_feed_chat(s, &c.chat, nullptr) == QWENRT_INVALID_ARGUMENT);
  CHECK(qwenrt_session_reset(s) == QWENRT_INVALID_ARGUMENT);
  qwenrt_backend b;
  CHECK(qwenrt_session_get_backend(s, &b) == QWENRT_OK);  // "any thread"
  CHECK(qwenrt_session_cancel(s) == QWENRT_OK);           // "any thread"
  slow.release.store(true);
  runner.join();
  CHECK((chat_status == QWENRT_OK || chat_status == QWENRT_CANCELLED));
  CHECK(qwenrt_session_n_tokens(s) > 0);
  qwenrt_session_free(s);
  qwenrt_model_free(m);
}

TEST_CASE("cancel racing free never touches freed memory", "[capi]") {
  qwenrt_model* m = LoadModel();
  for (int i = 0; i < 200; ++i) {
    qwenrt_session* s = NewSession(m);
    std::atomic<bool> go{false};
    std::thread canceller([&] {
      while (!go.load()) std::this_thread::yield();
      for (int k = 0; k < 50; ++k) {
        const qwenrt_status st = qwenrt_session_cancel(s);
        if (st != QWENRT_OK) {
          CHECK(st == QWENRT_INVALID_ARGUMENT);  // freed: refused, not dereferenced
          break;
        }
      }
    });
    go.store(true);
    qwenrt_session_free(s);
    canceller.join();
  }
  qwenrt_model_free(m);
}

}  // namespace

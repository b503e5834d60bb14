/* capi_engine_test: the qwenrt_engine C API on the tiny fixture model, in C99: host threads submit
 * chat turns of their own sessions to one engine and get the replies qwenrt_session_chat gives
 * alone; a session in a turn is busy for every other call; one session's cancel or bad input leaves
 * the others alone; freeing a session during its turn, and the engine with turns running, is safe.
 * Run under ThreadSanitizer by scripts/sanitize.sh. */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qwenrt/qwenrt.h"

#ifndef QWENRT_TEST_DATA
#error "QWENRT_TEST_DATA must point to tests/data"
#endif
#define MODEL_PATH QWENRT_TEST_DATA "/tiny-s1-q4km.gguf"

static int g_failures = 0;

#define EXPECT(cond)                                                                      \
  do {                                                                                    \
    if (!(cond)) {                                                                        \
      fprintf(stderr, "%s:%d: FAILED: %s\n  last error: %s\n", __FILE__, __LINE__, #cond, \
              qwenrt_last_error());                                                       \
      ++g_failures;                                                                       \
    }                                                                                     \
  } while (0)
#define ASSERT_OK(call)                                                                          \
  do {                                                                                           \
    qwenrt_status s_ = (call);                                                                   \
    if (s_ != QWENRT_OK) {                                                                       \
      fprintf(stderr, "%s:%d: FATAL: %s: %s\n", __FILE__, __LINE__, #call, qwenrt_last_error()); \
      exit(1);                                                                                   \
    }                                                                                            \
  } while (0)

#define N_HOSTS 4
#define CAP 8192

typedef struct {
  char text[CAP];
  size_t len;
} buffer;

static bool append(qwenrt_piece_kind kind, const char* text, size_t len, void* user_data) {
  buffer* b = (buffer*)user_data;
  (void)kind;
  if (b->len + len < CAP) {
    memcpy(b->text + b->len, text, len);
    b->len += len;
    b->text[b->len] = '\0';
  }
  return true;
}

/* Cancels its own session's turn at the first piece (a callback may call qwenrt_session_cancel). */
static qwenrt_session* g_cancel_me;
static bool cancel_at_first(qwenrt_piece_kind kind, const char* text, size_t len, void* user_data) {
  (void)kind;
  (void)text;
  (void)len;
  (void)user_data;
  return qwenrt_session_cancel(g_cancel_me) == QWENRT_OK;
}

static qwenrt_model* g_model;
static qwenrt_engine* g_engine;

static qwenrt_session* NewSessionOn(int32_t n_ctx, qwenrt_backend backend) {
  qwenrt_session_params p;
  ASSERT_OK(QWENRT_INIT(qwenrt_session_params_init, &p));
  qwenrt_session* s = NULL;
  p.backend = backend;
  p.n_threads = 1;
  p.n_ctx = n_ctx;
  ASSERT_OK(qwenrt_session_create(g_model, &p, &s));
  return s;
}

static qwenrt_session* NewSession(int32_t n_ctx) { return NewSessionOn(n_ctx, QWENRT_BACKEND_CPU); }

typedef struct {
  int index;
  int max_tokens;
  char prompt[64];
  qwenrt_message msg;
  qwenrt_chat chat;
  qwenrt_sampling_params sp;
  qwenrt_generate_params gp;
  buffer out;
} request;

static void MakeRequest(request* r, int index, const char* prompt, int max_tokens) {
  memset(r, 0, sizeof *r);
  r->index = index;
  snprintf(r->prompt, sizeof r->prompt, "%s", prompt);
  r->msg.struct_size = sizeof r->msg;
  r->msg.role = QWENRT_ROLE_USER;
  r->msg.content = r->prompt;
  ASSERT_OK(QWENRT_INIT(qwenrt_chat_init, &r->chat));
  r->chat.messages = &r->msg;
  r->chat.n_messages = 1;
  ASSERT_OK(QWENRT_INIT(qwenrt_sampling_params_init, &r->sp));
  r->sp.temperature = 10.0f; /* the tiny model's replies are mostly "\n" otherwise */
  r->sp.frequency_penalty = 20.0f;
  r->sp.seed = (uint64_t)(77 + index);
  ASSERT_OK(QWENRT_INIT(qwenrt_generate_params_init, &r->gp));
  r->gp.max_tokens = max_tokens;
  r->gp.callback = append;
  r->gp.user_data = &r->out;
}

typedef struct {
  request req;
  qwenrt_status status;
  buffer alone;
} host;

static void* Host(void* arg) {
  host* h = (host*)arg;
  /* Every other host takes the default backend: AUTO never makes a session the engine refuses. */
  qwenrt_session* s = NewSessionOn(0, h->req.index % 2 ? QWENRT_BACKEND_AUTO : QWENRT_BACKEND_CPU);
  qwenrt_report report = {.struct_size = sizeof(qwenrt_report)};
  h->status = qwenrt_engine_submit_chat(g_engine, s, &h->req.chat, &h->req.sp, &h->req.gp);
  if (h->status == QWENRT_OK) h->status = qwenrt_session_wait_turn(s, &report);
  if (h->status == QWENRT_OK && report.generated_tokens < 1) h->status = QWENRT_INTERNAL;
  qwenrt_session_free(s);
  return NULL;
}

int main(void) {
  ASSERT_OK(qwenrt_model_load(MODEL_PATH, NULL, &g_model));
  {
    qwenrt_engine_params bad;
    ASSERT_OK(QWENRT_INIT(qwenrt_engine_params_init, &bad));
    qwenrt_engine* e = NULL;
    bad.step_tokens = 0;
    EXPECT(qwenrt_engine_create(g_model, &bad, &e) == QWENRT_INVALID_ARGUMENT && e == NULL);
    EXPECT(qwenrt_engine_create(NULL, NULL, &e) == QWENRT_INVALID_ARGUMENT);
  }
  {
    qwenrt_engine_params ep;
    ASSERT_OK(QWENRT_INIT(qwenrt_engine_params_init, &ep));
    ep.n_threads = 2;
    ep.step_tokens = 32;
    ASSERT_OK(qwenrt_engine_create(g_model, &ep, &g_engine));
  }

  /* Hosts on several threads: each batched reply equals the same chat alone. */
  {
    static host hosts[N_HOSTS];
    pthread_t threads[N_HOSTS];
    int i;
    for (i = 0; i < N_HOSTS; ++i) {
      char prompt[64];
      snprintf(prompt, sizeof prompt, "Host %d says hello", i);
      MakeRequest(&hosts[i].req, i, prompt, 8 + 2 * i);
      EXPECT(pthread_create(&threads[i], NULL, Host, &hosts[i]) == 0);
    }
    for (i = 0; i < N_HOSTS; ++i) pthread_join(threads[i], NULL);
    for (i = 0; i < N_HOSTS; ++i) {
      qwenrt_session* s = NewSession(0);
      request alone;
      EXPECT(hosts[i].status == QWENRT_OK);
      MakeRequest(&alone, i, hosts[i].req.prompt, hosts[i].req.max_tokens);
      alone.gp.max_tokens = 8 + 2 * i;
      ASSERT_OK(qwenrt_session_chat(s, &alone.chat, &alone.sp, &alone.gp, NULL));
      EXPECT(strcmp(alone.out.text, hosts[i].req.out.text) == 0);
      qwenrt_session_free(s);
    }
  }

  /* Busy rule, cancel and bad input per session. */
  {
    qwenrt_session *a = NewSession(0), *b = NewSession(0), *small = NewSession(12);
    request ra, rb, rs;
    qwenrt_report report = {.struct_size = sizeof(qwenrt_report)};
    bool done = true;
    MakeRequest(&ra, 0, "A long reply please", 200);
    g_cancel_me = a;
    ra.gp.callback = cancel_at_first;
    MakeRequest(&rb, 1, "A short one", 6);
    MakeRequest(&rs, 2, "This prompt is far too long for a context of twelve tokens", 4);
    EXPECT(qwenrt_session_turn_done(a, &done) == QWENRT_INVALID_ARGUMENT); /* nothing submitted */
    EXPECT(qwenrt_session_wait_turn(a, NULL) == QWENRT_INVALID_ARGUMENT);
    ASSERT_OK(qwenrt_engine_submit_chat(g_engine, a, &ra.chat, &ra.sp, &ra.gp));
    ASSERT_OK(qwenrt_engine_submit_chat(g_engine, b, &rb.chat, &rb.sp, &rb.gp));
    EXPECT(qwenrt_engine_submit_chat(g_engine, small, &rs.chat, &rs.sp, &rs.gp) ==
           QWENRT_CONTEXT_FULL);
    EXPECT(qwenrt_engine_submit_chat(g_engine, a, &ra.chat, &ra.sp, &ra.gp) ==
           QWENRT_INVALID_ARGUMENT);
    EXPECT(qwenrt_session_reset(a) == QWENRT_INVALID_ARGUMENT); /* busy while its turn runs */
    {
      const qwenrt_status st = qwenrt_session_wait_turn(a, &report);
      if (st != QWENRT_CANCELLED)
        fprintf(stderr, "status %s, %d tokens\n", qwenrt_status_string(st),
                (int)report.generated_tokens);
      EXPECT(st == QWENRT_CANCELLED);
    }
    EXPECT(qwenrt_session_wait_turn(b, &report) == QWENRT_OK);
    EXPECT(report.generated_tokens == 6);
    EXPECT(qwenrt_session_turn_done(b, &done) == QWENRT_INVALID_ARGUMENT); /* collected */
    EXPECT(qwenrt_session_reset(a) == QWENRT_OK);                          /* free again */
    /* A session freed during its turn, and the engine freed with a turn running. */
    MakeRequest(&ra, 3, "Again", 500);
    MakeRequest(&rb, 4, "And again", 500);
    ASSERT_OK(qwenrt_engine_submit_chat(g_engine, a, &ra.chat, &ra.sp, &ra.gp));
    ASSERT_OK(qwenrt_engine_submit_chat(g_engine, b, &rb.chat, &rb.sp, &rb.gp));
    qwenrt_session_free(a);
    qwenrt_engine_free(g_engine);
    EXPECT(qwenrt_session_turn_done(b, &done) == QWENRT_OK && done);
    {
      const qwenrt_status st =
          qwenrt_session_wait_turn(b, NULL); /* cancelled, unless it ended first */
      EXPECT(st == QWENRT_CANCELLED || st == QWENRT_OK);
    }
    EXPECT(qwenrt_session_reset(b) == QWENRT_OK);
    qwenrt_session_free(b);
    qwenrt_session_free(small);
  }
  qwenrt_model_free(g_model);
  if (g_failures > 0) {
    fprintf(stderr, "capi_engine_test: %d failures\n", g_failures);
    return 1;
  }
  printf("capi_engine_test: OK\n");
  return 0;
}

/* N chats at once through one engine, in plain C99 over the qwenrt C API. Each of N host threads
 * submits a chat turn of its own session to the shared qwenrt_engine and waits for it; the engine
 * batches the sessions' prefills and decode steps into one forward pass per step and streams each
 * session's pieces to its own callback. Afterwards every chat is run again alone
 * (qwenrt_session_chat) and the program exits non-zero unless each reply is the same.
 * The model is the tiny fixture model embedded in the binary (examples/chat_repl/embedded_model.c).
 * usage: parallel_chats [N_CHATS] [MAX_TOKENS] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qwenrt/qwenrt.h"

extern const unsigned char qwenrt_repl_embedded_model[];
extern const unsigned char qwenrt_repl_embedded_model_end[];

#define MAX_CHATS 64
#define REPLY_CAP 65536

typedef struct chat_job {
  int index;
  qwenrt_engine* engine;
  qwenrt_model* model;
  char prompt[64];
  int max_tokens;
  char streamed[REPLY_CAP]; /* the pieces as they arrived (on the engine's thread) */
  size_t streamed_len;
  char alone[REPLY_CAP];
  size_t alone_len;
  qwenrt_status status;
  qwenrt_report report;
} chat_job;

static bool collect(qwenrt_piece_kind kind, const char* text, size_t len, void* user_data) {
  chat_job* job = (chat_job*)user_data;
  char* dst = job->streamed;
  size_t* n = &job->streamed_len;
  (void)kind;
  if (job->engine == NULL) { /* the alone run */
    dst = job->alone;
    n = &job->alone_len;
  }
  if (*n + len < REPLY_CAP) {
    memcpy(dst + *n, text, len);
    *n += len;
    dst[*n] = '\0';
  }
  return true;
}

/* One chat turn of `session`: through the engine when job->engine is set, else alone. */
static qwenrt_status run_chat(chat_job* job, qwenrt_session* session, qwenrt_report* report) {
  qwenrt_message msg = {sizeof(qwenrt_message), QWENRT_ROLE_USER, job->prompt, NULL, NULL, 0};
  qwenrt_chat chat;
  qwenrt_sampling_params sp;
  qwenrt_generate_params gp;
  qwenrt_status s;
  /* Params are filled by the library for the size this header knows (struct_size first). */
  if ((s = QWENRT_INIT(qwenrt_chat_init, &chat)) != QWENRT_OK ||
      (s = QWENRT_INIT(qwenrt_sampling_params_init, &sp)) != QWENRT_OK ||
      (s = QWENRT_INIT(qwenrt_generate_params_init, &gp)) != QWENRT_OK)
    return s;
  chat.messages = &msg;
  chat.n_messages = 1;
  sp.temperature = 10.0f; /* the tiny random model: hot sampling and a penalty give varied text */
  sp.frequency_penalty = 20.0f;
  sp.seed = (uint64_t)(1000 + job->index); /* each chat samples differently */
  gp.max_tokens = job->max_tokens;
  gp.callback = collect;
  gp.user_data = job;
  gp.sampling = &sp;
  if (job->engine == NULL) return qwenrt_session_chat(session, &chat, NULL, &gp, report);
  s = qwenrt_engine_submit_chat(job->engine, session, &chat, NULL, &gp);
  if (s != QWENRT_OK) return s;
  return qwenrt_session_wait_turn(session, report); /* blocks this host thread only */
}

static qwenrt_session* new_session(qwenrt_model* model) {
  qwenrt_session_params p;
  qwenrt_session* s = NULL;
  if (QWENRT_INIT(qwenrt_session_params_init, &p) != QWENRT_OK) return NULL;
  p.backend = QWENRT_BACKEND_CPU; /* the engine batches CPU sessions */
  p.n_threads = 2;
  return qwenrt_session_create(model, &p, &s) == QWENRT_OK ? s : NULL;
}

static void* host_thread(void* arg) {
  chat_job* job = (chat_job*)arg;
  qwenrt_session* session = new_session(job->model);
  job->report.struct_size = sizeof(qwenrt_report);
  job->status = session == NULL ? QWENRT_OUT_OF_MEMORY : run_chat(job, session, &job->report);
  if (job->status != QWENRT_OK) fprintf(stderr, "chat %d: %s\n", job->index, qwenrt_last_error());
  qwenrt_session_free(session);
  return NULL;
}

int main(int argc, char** argv) {
  const int n = argc > 1 ? atoi(argv[1]) : 4;
  const int max_tokens = argc > 2 ? atoi(argv[2]) : 16;
  static chat_job jobs[MAX_CHATS];
  pthread_t threads[MAX_CHATS];
  qwenrt_model* model = NULL;
  qwenrt_engine* engine = NULL;
  qwenrt_engine_params ep;
  int i, same = 0;
  if (n < 1 || n > MAX_CHATS) {
    fprintf(stderr, "usage: %s [N_CHATS 1..%d] [MAX_TOKENS]\n", argv[0], MAX_CHATS);
    return 2;
  }
  if (qwenrt_model_load_from_memory(
          qwenrt_repl_embedded_model,
          (size_t)(qwenrt_repl_embedded_model_end - qwenrt_repl_embedded_model), NULL,
          &model) != QWENRT_OK) {
    fprintf(stderr, "model: %s\n", qwenrt_last_error());
    return 1;
  }
  if (QWENRT_INIT(qwenrt_engine_params_init, &ep) != QWENRT_OK) {
    fprintf(stderr, "engine params: %s\n", qwenrt_last_error());
    return 1;
  }
  ep.n_threads = 2;
  ep.step_tokens = 64; /* small: the prompts prefill in chunks next to the decoding chats */
  if (qwenrt_engine_create(model, &ep, &engine) != QWENRT_OK) {
    fprintf(stderr, "engine: %s\n", qwenrt_last_error());
    return 1;
  }
  for (i = 0; i < n; ++i) {
    jobs[i].index = i;
    jobs[i].engine = engine;
    jobs[i].model = model;
    jobs[i].max_tokens = max_tokens;
    snprintf(jobs[i].prompt, sizeof jobs[i].prompt, "Chat number %d: tell me something.", i);
    pthread_create(&threads[i], NULL, host_thread, &jobs[i]);
  }
  for (i = 0; i < n; ++i) pthread_join(threads[i], NULL);
  qwenrt_engine_free(engine);

  for (i = 0; i < n; ++i) { /* the same chat alone */
    qwenrt_session* s = new_session(model);
    qwenrt_status st;
    jobs[i].engine = NULL;
    st = s == NULL ? QWENRT_OUT_OF_MEMORY : run_chat(&jobs[i], s, NULL);
    qwenrt_session_free(s);
    printf("chat %d (%s, %lld tokens, ttft %.1f ms): %s\n", i, qwenrt_status_string(jobs[i].status),
           (long long)jobs[i].report.generated_tokens, jobs[i].report.ttft_ms, jobs[i].streamed);
    if (jobs[i].status == QWENRT_OK && st == QWENRT_OK &&
        strcmp(jobs[i].streamed, jobs[i].alone) == 0)
      ++same;
  }
  qwenrt_model_free(model);
  if (same != n) {
    printf("FAILED: %d of %d chats equal to running alone\n", same, n);
    return 1;
  }
  printf("OK: %d chats ran batched, each equal to running alone\n", n);
  return 0;
}

/* A two-turn chat in plain C99 over the qwenrt C API. Turn 2 sends the whole conversation again;
 * the session reuses what it computed in turn 1, and the program exits non-zero unless the report
 * says so. usage: two_turn_chat MODEL.gguf [MAX_TOKENS] */
#include <stdio.h>
#include <stdlib.h>

#include "qwenrt/qwenrt.h"

#define CHECK(call)                                                   \
  do {                                                                \
    qwenrt_status s_ = (call);                                        \
    if (s_ != QWENRT_OK) {                                            \
      fprintf(stderr, "%s failed: %s\n", #call, qwenrt_last_error()); \
      return 1;                                                       \
    }                                                                 \
  } while (0)

static bool print_piece(qwenrt_piece_kind kind, const char* text, size_t len, void* user_data) {
  (void)user_data;
  if (kind == QWENRT_PIECE_CONTENT) fwrite(text, 1, len, stdout);
  return true; /* keep going */
}

int main(int argc, char** argv) {
  qwenrt_model* model = NULL;
  qwenrt_session* session = NULL;
  qwenrt_message msgs[3] = {
      {sizeof(qwenrt_message), QWENRT_ROLE_USER, "What is the capital of Kenya?", NULL, NULL, 0}};
  qwenrt_chat chat;
  qwenrt_generate_params gp;
  qwenrt_report r1 = {.struct_size = sizeof(qwenrt_report)};
  qwenrt_report r2 = {.struct_size = sizeof(qwenrt_report)};
  static char reply[1 << 16];
  size_t needed = 0;

  if (argc < 2) {
    fprintf(stderr, "usage: %s MODEL.gguf [MAX_TOKENS]\n", argv[0]);
    return 2;
  }
  if (qwenrt_abi_version() < QWENRT_ABI_VERSION) {
    fprintf(stderr, "libqwenrt ABI %d is older than this header's %d\n", qwenrt_abi_version(),
            QWENRT_ABI_VERSION);
    return 1;
  }
  /* Params are filled by the library for the size this header knows (struct_size first). */
  CHECK(QWENRT_INIT(qwenrt_chat_init, &chat));
  CHECK(QWENRT_INIT(qwenrt_generate_params_init, &gp));
  gp.max_tokens = argc > 2 ? atoi(argv[2]) : 32;
  gp.callback = print_piece;

  CHECK(qwenrt_model_load(argv[1], NULL, &model));
  CHECK(qwenrt_session_create(model, NULL, &session));

  chat.messages = msgs;
  chat.n_messages = 1;
  printf("turn 1: ");
  CHECK(qwenrt_session_chat(session, &chat, NULL, &gp, &r1)); /* NULL sampling: greedy */
  CHECK(qwenrt_session_get_reply(session, QWENRT_PIECE_CONTENT, reply, sizeof reply, &needed));

  msgs[1] = (qwenrt_message){sizeof(qwenrt_message), QWENRT_ROLE_ASSISTANT, reply, NULL, NULL, 0};
  msgs[2] =
      (qwenrt_message){sizeof(qwenrt_message), QWENRT_ROLE_USER, "And of Ghana?", NULL, NULL, 0};
  chat.n_messages = 3;
  printf("\nturn 2: ");
  CHECK(qwenrt_session_chat(session, &chat, NULL, &gp, &r2));
  printf("\nturn 1: prompt %lld, prefilled %lld\n", (long long)r1.prompt_tokens,
         (long long)r1.prefilled_tokens);
  printf("turn 2: prompt %lld, reused %lld, prefilled %lld, ttft %.2f ms\n",
         (long long)r2.prompt_tokens, (long long)r2.reused_tokens, (long long)r2.prefilled_tokens,
         r2.ttft_ms);

  qwenrt_session_free(session);
  qwenrt_model_free(model);
  /* Turn 2 must not have recomputed turn 1's prompt (all but its last few generation-prompt
   * tokens). */
  if (r2.reused_tokens <= 0 || r2.reused_tokens + r2.prefilled_tokens != r2.prompt_tokens ||
      r2.prefilled_tokens >= r2.prompt_tokens) {
    fprintf(stderr, "FAIL: turn 2 did not reuse turn 1\n");
    return 1;
  }
  printf("OK: turn 2 reused %lld tokens of turn 1\n", (long long)r2.reused_tokens);
  return 0;
}

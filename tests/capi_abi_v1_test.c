/* capi_abi_v1_test: a host built against the ABI 1 header (tests/abi/qwenrt_v1.h, the header of
 * the first release, copied unchanged) and linked with today's libqwenrt.so. It uses only what
 * that header had: params returned by value (qwenrt_*_default_params, qwenrt_chat_default), the
 * load options struct with qwenrt_model_load_ex / _from_memory_ex, and the session setters
 * (constraint, reasoning budget, tool choice, checkpoint budget, KV type). Every call must work as
 * it did: the structs the library returns by value have the ABI 1 sizes, and what the setters set
 * reaches the generation. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi/qwenrt_v1.h"
#include "capi_test_util.h"

/* A by-value result in a buffer with a canary behind it: the library must write exactly the ABI 1
 * size (a larger struct would overwrite the canary, or the stack behind a real host's variable). */
#define CANARY 0x5AA5C33Cu
#define CHECK_BY_VALUE(type, fn)               \
  do {                                         \
    struct {                                   \
      type v;                                  \
      uint32_t canary;                         \
    } box;                                     \
    box.canary = CANARY;                       \
    box.v = fn();                              \
    EXPECT(box.canary == CANARY);              \
    EXPECT(box.v.struct_size == sizeof(type)); \
  } while (0)

static char* Reply(qwenrt_session* s, qwenrt_piece_kind kind) {
  size_t needed = 0;
  char* buf;
  qwenrt_session_get_reply(s, kind, NULL, 0, &needed);
  buf = (char*)malloc(needed);
  ASSERT_OK(qwenrt_session_get_reply(s, kind, buf, needed, &needed));
  return buf;
}

static const char* kTools =
    "[{\"type\": \"function\", \"function\": {\"name\": \"pick\", \"parameters\": {\"type\": "
    "\"object\", \"properties\": {\"n\": {\"type\": \"integer\", \"minimum\": -5, \"maximum\": "
    "5}}, \"required\": [\"n\"]}}}]";

int main(void) {
  qwenrt_model_params mp = qwenrt_model_default_params();
  qwenrt_session_params sp = qwenrt_session_default_params();
  qwenrt_sampling_params samp = qwenrt_sampling_default_params();
  qwenrt_generate_params gp = qwenrt_generate_default_params();
  qwenrt_engine_params ep = qwenrt_engine_default_params();
  qwenrt_chat chat = qwenrt_chat_default();
  qwenrt_model_options o;
  qwenrt_model *model = NULL, *model2 = NULL;
  qwenrt_session* s = NULL;
  qwenrt_engine* e = NULL;
  qwenrt_constraint* digits = NULL;
  qwenrt_message msg;
  qwenrt_report r;
  qwenrt_kv_type kv;
  char *content, *calls, *reasoning;
  const char* p;
  void* bytes;
  size_t n;
  FILE* f;

  /* The library is at least this header's revision, and serves ABI 1 hosts. */
  EXPECT(qwenrt_abi_version() >= QWENRT_ABI_VERSION);
  EXPECT(QWENRT_ABI_VERSION == 1);

  /* Defaults by value, with the ABI 1 sizes and values. */
  CHECK_BY_VALUE(qwenrt_model_params, qwenrt_model_default_params);
  CHECK_BY_VALUE(qwenrt_session_params, qwenrt_session_default_params);
  CHECK_BY_VALUE(qwenrt_sampling_params, qwenrt_sampling_default_params);
  CHECK_BY_VALUE(qwenrt_generate_params, qwenrt_generate_default_params);
  CHECK_BY_VALUE(qwenrt_engine_params, qwenrt_engine_default_params);
  CHECK_BY_VALUE(qwenrt_chat, qwenrt_chat_default);
  EXPECT(mp.struct_size == sizeof mp && !mp.check_tensors && mp.progress_callback == NULL);
  EXPECT(sp.struct_size == sizeof sp && sp.n_ctx == 0 && sp.backend == QWENRT_BACKEND_AUTO &&
         sp.split_invariant && sp.history_mode == QWENRT_HISTORY_TEMPLATE);
  EXPECT(samp.temperature == 0.0f && samp.top_p == 1.0f && samp.repeat_last_n == 64);
  EXPECT(gp.max_tokens == 512 && gp.callback == NULL);
  EXPECT(ep.step_tokens == 512 && ep.max_sessions == 16);
  EXPECT(chat.enable_thinking && chat.add_generation_prompt && chat.n_messages == 0);

  /* Load with options (file and memory). */
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.read_file = true;
  ASSERT_OK(qwenrt_model_load_ex(MODEL_PATH, &mp, &o, &model));
  f = fopen(MODEL_PATH, "rb");
  EXPECT(f != NULL);
  fseek(f, 0, SEEK_END);
  n = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  bytes = malloc(n);
  EXPECT(fread(bytes, 1, n, f) == n);
  fclose(f);
  o.read_file = false;
  o.template_max_value_depth = -1;
  EXPECT(qwenrt_model_load_from_memory_ex(bytes, n, &mp, &o, &model2) == QWENRT_INVALID_ARGUMENT);
  EXPECT(strstr(qwenrt_last_error(), "template_max_value_depth") != NULL);
  o.template_max_value_depth = 0;
  ASSERT_OK(qwenrt_model_load_from_memory_ex(bytes, n, &mp, &o, &model2));
  free(bytes);
  qwenrt_model_free(model2);

  /* A session with the setters. */
  sp.backend = QWENRT_BACKEND_CPU;
  sp.n_threads = 1;
  ASSERT_OK(qwenrt_session_create(model, &sp, &s));
  ASSERT_OK(qwenrt_session_set_kv_type(s, QWENRT_KV_Q8_0));
  ASSERT_OK(qwenrt_session_get_kv_type(s, &kv));
  EXPECT(kv == QWENRT_KV_Q8_0);
  ASSERT_OK(qwenrt_session_set_checkpoint_budget(s, 1u << 20));
  ASSERT_OK(qwenrt_constraint_compile(QWENRT_CONSTRAINT_REGEX, "[0-9]{2,6}", 10, &digits));
  ASSERT_OK(qwenrt_session_set_constraint(s, digits));

  memset(&msg, 0, sizeof msg);
  msg.struct_size = sizeof msg;
  msg.role = QWENRT_ROLE_USER;
  msg.content = "Say a number";
  chat.messages = &msg;
  chat.n_messages = 1;
  chat.enable_thinking = false;
  samp.temperature = 1.5f;
  samp.seed = 3;
  gp.max_tokens = 40;
  memset(&r, 0, sizeof r);
  r.struct_size = sizeof r;
  ASSERT_OK(qwenrt_session_chat(s, &chat, &samp, &gp, &r));
  content = Reply(s, QWENRT_PIECE_CONTENT);
  EXPECT(strlen(content) >= 2 && strlen(content) <= 6);
  for (p = content; *p; ++p) EXPECT(*p >= '0' && *p <= '9');
  free(content);

  /* Reasoning budget: thinking on, 4 reasoning tokens at most. */
  ASSERT_OK(qwenrt_session_set_constraint(s, NULL));
  ASSERT_OK(qwenrt_session_set_reasoning_budget(s, 4));
  chat.enable_thinking = true;
  ASSERT_OK(qwenrt_session_reset(s));
  ASSERT_OK(qwenrt_session_chat(s, &chat, &samp, &gp, &r));
  reasoning = Reply(s, QWENRT_PIECE_REASONING);
  EXPECT(r.reasoning_budget_hit == 1 && r.reasoning_tokens <= 4 + 8);
  free(reasoning);
  ASSERT_OK(qwenrt_session_set_reasoning_budget(s, 0));

  /* Tool choice: a call of `pick` that parses. */
  ASSERT_OK(qwenrt_session_set_tool_choice(s, QWENRT_TOOL_CHOICE_FUNCTION, "pick"));
  chat.enable_thinking = false;
  chat.tools_json = kTools;
  gp.max_tokens = 200;
  ASSERT_OK(qwenrt_session_reset(s));
  ASSERT_OK(qwenrt_session_chat(s, &chat, &samp, &gp, &r));
  calls = Reply(s, QWENRT_PIECE_TOOL_CALL);
  EXPECT(strstr(calls, "pick") != NULL && strstr(calls, "raw") == NULL);
  free(calls);
  ASSERT_OK(qwenrt_session_set_tool_choice(s, QWENRT_TOOL_CHOICE_FREE, NULL));

  /* The engine with by-value params; the session's constraint reaches its turn. */
  ep.n_threads = 1;
  ASSERT_OK(qwenrt_engine_create(model, &ep, &e));
  ASSERT_OK(qwenrt_session_set_constraint(s, digits));
  ASSERT_OK(qwenrt_session_reset(s));
  chat.tools_json = NULL;
  gp.max_tokens = 40;
  ASSERT_OK(qwenrt_engine_submit_chat(e, s, &chat, &samp, &gp));
  ASSERT_OK(qwenrt_session_wait_turn(s, &r));
  content = Reply(s, QWENRT_PIECE_CONTENT);
  EXPECT(strlen(content) >= 2 && strlen(content) <= 6);
  for (p = content; *p; ++p) EXPECT(*p >= '0' && *p <= '9');
  free(content);
  qwenrt_engine_free(e);
  qwenrt_session_free(s);

  qwenrt_constraint_free(digits);
  qwenrt_model_free(model);
  if (g_failures > 0) {
    fprintf(stderr, "capi_abi_v1_test: %d failure(s)\n", g_failures);
    return 1;
  }
  printf("capi_abi_v1_test: OK\n");
  return 0;
}

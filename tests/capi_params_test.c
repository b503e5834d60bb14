/* capi_params_test: the params structs initialised by pointer (ABI 2), in C99 on the tiny fixture
 * model. Each `*_init` fills the defaults and refuses a struct_size that no version has; a struct
 * of the first version's size (an ABI 1 host's) is neither written nor read past its end (it sits
 * at the end of a page whose successor is inaccessible, and garbage in the bytes a newer struct
 * would use is ignored); a larger struct gets zeros past this library's; and every option folded
 * into the params (load options, KV type, sampling, constraint, tool choice, reasoning budget)
 * gives the same output as the deprecated function it replaces. */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "capi_test_util.h"
#include "qwenrt/qwenrt.h"

/* `call` returns `want` and the last error mentions `needle`. */
#define EXPECT_STATUS(call, want, needle)                                    \
  do {                                                                       \
    qwenrt_status s_ = (call);                                               \
    EXPECT(s_ == (want));                                                    \
    if (s_ == (want)) EXPECT(strstr(qwenrt_last_error(), (needle)) != NULL); \
  } while (0)

/* The size of a struct of type T whose last field is `last`: the first version's size (ABI 1) when
 * `last` is its last field, tail padding included. */
typedef struct ModelAlign {
  char c;
  qwenrt_model_params t;
} ModelAlign;
typedef struct SessionAlign {
  char c;
  qwenrt_session_params t;
} SessionAlign;
typedef struct GenerateAlign {
  char c;
  qwenrt_generate_params t;
} GenerateAlign;
#define SIZE_UP_TO(T, last, align) \
  ((offsetof(T, last) + sizeof(((T*)0)->last) + (align)-1) / (align) * (align))
#define MODEL_V1 SIZE_UP_TO(qwenrt_model_params, progress_user_data, offsetof(ModelAlign, t))
#define SESSION_V1 SIZE_UP_TO(qwenrt_session_params, split_invariant, offsetof(SessionAlign, t))
#define GENERATE_V1 SIZE_UP_TO(qwenrt_generate_params, user_data, offsetof(GenerateAlign, t))

/* ---- a page-end allocation: a read or write past `size` bytes faults ----------------------------
 */

typedef struct Guarded {
  unsigned char* base;
  size_t page;
  void* p; /* `size` bytes ending at the inaccessible page */
} Guarded;

static Guarded GuardedAlloc(size_t size) {
  Guarded g;
  g.page = (size_t)sysconf(_SC_PAGESIZE);
  g.base = (unsigned char*)mmap(NULL, 2 * g.page, PROT_READ | PROT_WRITE,
                                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (g.base == (unsigned char*)MAP_FAILED || mprotect(g.base + g.page, g.page, PROT_NONE) != 0) {
    fprintf(stderr, "mmap/mprotect failed\n");
    exit(1);
  }
  g.p = g.base + g.page - size;
  memset(g.p, 0, size);
  return g;
}

static void GuardedFree(Guarded g) { munmap(g.base, 2 * g.page); }

/* ---- helpers --------------------------------------------------------------------------------- */

static qwenrt_session* NewSession(qwenrt_model* m, qwenrt_kv_type kv) {
  qwenrt_session_params sp;
  qwenrt_session* s = NULL;
  ASSERT_OK(QWENRT_INIT(qwenrt_session_params_init, &sp));
  sp.backend = QWENRT_BACKEND_CPU;
  sp.n_threads = 1;
  sp.kv_type = kv;
  ASSERT_OK(qwenrt_session_create(m, &sp, &s));
  return s;
}

/* The reply of kind `kind`, malloc'd. */
static char* Reply(qwenrt_session* s, qwenrt_piece_kind kind) {
  size_t needed = 0;
  char* buf;
  qwenrt_session_get_reply(s, kind, NULL, 0, &needed);
  buf = (char*)malloc(needed);
  ASSERT_OK(qwenrt_session_get_reply(s, kind, buf, needed, &needed));
  return buf;
}

/* What one chat turn produced: the three reply kinds and the report. */
typedef struct Turn {
  qwenrt_status status;
  char* content;
  char* reasoning;
  char* tool_calls;
  char error[512]; /* qwenrt_last_error() right after the chat */
  qwenrt_report report;
} Turn;

static const char* kTools =
    "[{\"type\": \"function\", \"function\": {\"name\": \"pick\", \"parameters\": {\"type\": "
    "\"object\", \"properties\": {\"n\": {\"type\": \"integer\", \"minimum\": -5, \"maximum\": "
    "5}}, \"required\": [\"n\"]}}}]";

/* One chat turn on a fresh session's state (reset first) with random sampling (seed, T = 1.5). */
static Turn ChatTurn(qwenrt_session* s, const qwenrt_generate_params* gp,
                     const qwenrt_sampling_params* sampling_arg, bool thinking, bool tools) {
  Turn t;
  qwenrt_message msg;
  qwenrt_chat chat;
  memset(&msg, 0, sizeof msg);
  msg.struct_size = sizeof msg;
  msg.role = QWENRT_ROLE_USER;
  msg.content = "Say something";
  ASSERT_OK(QWENRT_INIT(qwenrt_chat_init, &chat));
  chat.messages = &msg;
  chat.n_messages = 1;
  chat.enable_thinking = thinking;
  chat.tools_json = tools ? kTools : NULL;
  memset(&t.report, 0, sizeof t.report);
  t.report.struct_size = sizeof t.report;
  ASSERT_OK(qwenrt_session_reset(s));
  t.status = qwenrt_session_chat(s, &chat, sampling_arg, gp, &t.report);
  snprintf(t.error, sizeof t.error, "%s", qwenrt_last_error());
  t.content = Reply(s, QWENRT_PIECE_CONTENT);
  t.reasoning = Reply(s, QWENRT_PIECE_REASONING);
  t.tool_calls = Reply(s, QWENRT_PIECE_TOOL_CALL);
  return t;
}

static void FreeTurn(Turn* t) {
  free(t->content);
  free(t->reasoning);
  free(t->tool_calls);
}

/* Two turns produced the same output (timings aside). */
static int SameTurn(const Turn* a, const Turn* b) {
  return a->status == b->status && strcmp(a->content, b->content) == 0 &&
         strcmp(a->reasoning, b->reasoning) == 0 && strcmp(a->tool_calls, b->tool_calls) == 0 &&
         a->report.generated_tokens == b->report.generated_tokens &&
         a->report.reasoning_budget_hit == b->report.reasoning_budget_hit &&
         a->report.forced_tokens == b->report.forced_tokens &&
         a->report.stop_reason == b->report.stop_reason;
}

static qwenrt_sampling_params Sampling(uint64_t seed) {
  qwenrt_sampling_params p;
  ASSERT_OK(QWENRT_INIT(qwenrt_sampling_params_init, &p));
  p.temperature = 1.5f;
  p.seed = seed;
  return p;
}

/* ---- init ------------------------------------------------------------------------------------ */

static void TestInitDefaults(void) {
  qwenrt_model_params mp;
  qwenrt_session_params sp;
  qwenrt_sampling_params smp;
  qwenrt_generate_params gp;
  qwenrt_engine_params ep;
  qwenrt_chat chat;

  /* Garbage first: init must write every field. */
  memset(&mp, 0xA5, sizeof mp);
  memset(&sp, 0xA5, sizeof sp);
  memset(&smp, 0xA5, sizeof smp);
  memset(&gp, 0xA5, sizeof gp);
  memset(&ep, 0xA5, sizeof ep);
  memset(&chat, 0xA5, sizeof chat);
  ASSERT_OK(QWENRT_INIT(qwenrt_model_params_init, &mp));
  ASSERT_OK(QWENRT_INIT(qwenrt_session_params_init, &sp));
  ASSERT_OK(QWENRT_INIT(qwenrt_sampling_params_init, &smp));
  ASSERT_OK(QWENRT_INIT(qwenrt_generate_params_init, &gp));
  ASSERT_OK(QWENRT_INIT(qwenrt_engine_params_init, &ep));
  ASSERT_OK(QWENRT_INIT(qwenrt_chat_init, &chat));

  /* mp.pack_weights depends on the CPU (on where packing is faster: model/packed_weights.h
   * PackWeightsByDefault, checked by packed_in_place_test). */
  EXPECT(mp.struct_size == sizeof mp && !mp.check_tensors && mp.progress_callback == NULL &&
         mp.progress_user_data == NULL && !mp.read_file && mp.template_max_bytes == 0 &&
         mp.template_max_cost == 0 && mp.template_max_output_bytes == 0 &&
         mp.template_max_value_depth == 0);
  EXPECT(sp.struct_size == sizeof sp && sp.n_ctx == 0 && sp.n_threads == 0 &&
         sp.backend == QWENRT_BACKEND_AUTO && sp.checkpoint_budget == 0 &&
         sp.checkpoint_interval == 0 && sp.history_mode == QWENRT_HISTORY_TEMPLATE &&
         sp.log_callback == NULL && sp.log_user_data == NULL && sp.split_invariant &&
         sp.kv_type == QWENRT_KV_DEFAULT && sp.prefill_progress == NULL &&
         sp.prefill_progress_user_data == NULL && sp.memory_limit == 0);
  EXPECT(smp.struct_size == sizeof smp && smp.temperature == 0.0f && smp.top_k == 0 &&
         smp.top_p == 1.0f && smp.min_p == 0.0f && smp.repeat_penalty == 1.0f &&
         smp.repeat_last_n == 64 && smp.presence_penalty == 0.0f && smp.frequency_penalty == 0.0f &&
         smp.seed == 0);
  EXPECT(gp.struct_size == sizeof gp && gp.max_tokens == 512 && gp.stop_strings == NULL &&
         gp.n_stop_strings == 0 && gp.callback == NULL && gp.user_data == NULL &&
         gp.sampling == NULL && gp.constraint == NULL &&
         gp.tool_choice == QWENRT_TOOL_CHOICE_FREE && gp.tool_function == NULL &&
         gp.max_reasoning_tokens == 0);
  EXPECT(ep.struct_size == sizeof ep && ep.n_threads == 0 && ep.step_tokens == 512 &&
         ep.max_sessions == 16);
  EXPECT(chat.struct_size == sizeof chat && chat.messages == NULL && chat.n_messages == 0 &&
         chat.tools_json == NULL && chat.enable_thinking && chat.add_generation_prompt);
  EXPECT(qwenrt_abi_version() == QWENRT_ABI_VERSION && QWENRT_ABI_VERSION >= 2);
}

static void TestInitErrors(void) {
  qwenrt_session_params sp;
  qwenrt_generate_params gp;
  EXPECT_STATUS(qwenrt_session_params_init(NULL), QWENRT_INVALID_ARGUMENT, "NULL");
  memset(&sp, 0x5A, sizeof sp);
  sp.struct_size = 0;
  EXPECT_STATUS(qwenrt_session_params_init(&sp), QWENRT_INVALID_ARGUMENT, "struct_size is 0");
  EXPECT(sp.n_ctx == 0x5A5A5A5A); /* unchanged on error */
  sp.struct_size = 8;             /* smaller than any version */
  EXPECT_STATUS(qwenrt_session_params_init(&sp), QWENRT_INVALID_ARGUMENT, "first version");
  EXPECT(sp.n_ctx == 0x5A5A5A5A);
  sp.struct_size = (uint32_t)SESSION_V1 + 2; /* not a multiple of 4 */
  EXPECT_STATUS(qwenrt_session_params_init(&sp), QWENRT_INVALID_ARGUMENT, "struct_size");
  sp.struct_size = 1u << 20; /* an uninitialised size */
  EXPECT_STATUS(qwenrt_session_params_init(&sp), QWENRT_INVALID_ARGUMENT, "struct_size");
  gp.struct_size = 4;
  EXPECT_STATUS(qwenrt_generate_params_init(&gp), QWENRT_INVALID_ARGUMENT,
                "qwenrt_generate_params");
  EXPECT_STATUS(qwenrt_chat_init(NULL), QWENRT_INVALID_ARGUMENT, "qwenrt_chat_init");
}

/* A newer header's struct (today's plus 16 bytes): init zeroes the bytes it does not know. */
static void TestInitLarger(void) {
  struct {
    qwenrt_generate_params base;
    unsigned char future[16];
  } big;
  size_t i;
  int zero = 1;
  memset(&big, 0xEE, sizeof big);
  big.base.struct_size = sizeof big;
  ASSERT_OK(qwenrt_generate_params_init(&big.base));
  EXPECT(big.base.struct_size == sizeof big && big.base.max_tokens == 512);
  for (i = 0; i < sizeof big.future; ++i) zero &= big.future[i] == 0;
  EXPECT(zero);
}

/* ---- an ABI 1 struct: nothing read or written past its size ---------------------------------- */

static void TestOldSizes(qwenrt_model* model) {
  Guarded gm = GuardedAlloc(MODEL_V1);
  Guarded gs = GuardedAlloc(SESSION_V1);
  Guarded gg = GuardedAlloc(GENERATE_V1);
  qwenrt_model_params* mp = (qwenrt_model_params*)gm.p;
  qwenrt_session_params* sp = (qwenrt_session_params*)gs.p;
  qwenrt_generate_params* gp = (qwenrt_generate_params*)gg.p;
  qwenrt_model* m2 = NULL;
  qwenrt_session* s = NULL;
  qwenrt_kv_type kv;
  qwenrt_session_params full;
  int32_t tokens[20];
  qwenrt_stop_reason stop;
  qwenrt_report r;

  /* init writes only the first version's bytes; the calls read only them. */
  mp->struct_size = (uint32_t)MODEL_V1;
  ASSERT_OK(qwenrt_model_params_init(mp));
  EXPECT(mp->struct_size == MODEL_V1 && !mp->check_tensors);
  ASSERT_OK(qwenrt_model_load(MODEL_PATH, mp, &m2));
  qwenrt_model_free(m2);

  sp->struct_size = (uint32_t)SESSION_V1;
  ASSERT_OK(qwenrt_session_params_init(sp));
  EXPECT(sp->struct_size == SESSION_V1 && sp->split_invariant);
  sp->n_ctx = 16;
  sp->backend = QWENRT_BACKEND_CPU;
  sp->n_threads = 1;
  ASSERT_OK(qwenrt_session_create(model, sp, &s));
  memset(tokens, 0, sizeof tokens);
  EXPECT(qwenrt_session_feed(s, tokens, 17, NULL) == QWENRT_CONTEXT_FULL); /* n_ctx was read */
  ASSERT_OK(qwenrt_session_feed(s, tokens, 8, NULL));

  gp->struct_size = (uint32_t)GENERATE_V1;
  ASSERT_OK(qwenrt_generate_params_init(gp));
  EXPECT(gp->max_tokens == 512);
  gp->max_tokens = 3;
  ASSERT_OK(qwenrt_session_generate(s, NULL, gp, &stop));
  memset(&r, 0, sizeof r);
  r.struct_size = sizeof r;
  ASSERT_OK(qwenrt_session_get_report(s, &r));
  EXPECT(r.generated_tokens <= 3 && (stop == QWENRT_STOP_MAX_TOKENS || stop == QWENRT_STOP_EOG));
  qwenrt_session_free(s);
  s = NULL;

  /* The same sizes in a full-size struct whose later bytes (the ABI 1 struct's tail padding
   * included) hold garbage: ignored. */
  ASSERT_OK(QWENRT_INIT(qwenrt_session_params_init, &full));
  memset((unsigned char*)&full + offsetof(qwenrt_session_params, split_invariant) + 1, 0x7F,
         sizeof full - offsetof(qwenrt_session_params, split_invariant) - 1);
  full.struct_size = (uint32_t)SESSION_V1;
  full.backend = QWENRT_BACKEND_CPU;
  full.n_threads = 1;
  ASSERT_OK(qwenrt_session_create(model, &full, &s));
  ASSERT_OK(qwenrt_session_get_kv_type(s, &kv));
  EXPECT(kv == QWENRT_KV_F16); /* the CPU default, not 0x7F7F7F7F */
  {
    qwenrt_generate_params g;
    ASSERT_OK(QWENRT_INIT(qwenrt_generate_params_init, &g));
    memset(&g.sampling, 0xFF, sizeof g - offsetof(qwenrt_generate_params, sampling));
    g.struct_size = (uint32_t)GENERATE_V1;
    g.max_tokens = 2;
    ASSERT_OK(qwenrt_session_feed(s, tokens, 4, NULL));
    ASSERT_OK(qwenrt_session_generate(s, NULL, &g, &stop)); /* garbage pointers never touched */
    /* A prefill of several batches: full.prefill_progress (0x7F7F...) would be called here. */
    ASSERT_OK(qwenrt_session_feed(s, tokens, 12, NULL));
  }
  qwenrt_session_free(s);

  GuardedFree(gm);
  GuardedFree(gs);
  GuardedFree(gg);
}

/* ---- prefill progress through qwenrt_session_params ------------------------------------------ */

typedef struct Progress {
  int calls;
  int cancel_at; /* return false on this call (1-based); 0 = never */
  int monotonic; /* done strictly increased and total stayed the same */
  int64_t last_done, total;
} Progress;

static bool OnPrefill(int64_t done, int64_t total, void* user_data) {
  Progress* p = (Progress*)user_data;
  if (p->calls > 0 && (done <= p->last_done || total != p->total)) p->monotonic = 0;
  p->last_done = done;
  p->total = total;
  return ++p->calls != p->cancel_at;
}

/* A session reporting to `p`, with a checkpoint every 4 tokens so a prefill runs in batches of 4.
 */
static qwenrt_session* NewProgressSession(qwenrt_model* m, Progress* p) {
  qwenrt_session_params sp;
  qwenrt_session* s = NULL;
  ASSERT_OK(QWENRT_INIT(qwenrt_session_params_init, &sp));
  sp.backend = QWENRT_BACKEND_CPU;
  sp.n_threads = 1;
  sp.checkpoint_interval = 4;
  sp.prefill_progress = OnPrefill;
  sp.prefill_progress_user_data = p;
  ASSERT_OK(qwenrt_session_create(m, &sp, &s));
  return s;
}

static void TestPrefillProgress(qwenrt_model* model) {
  Progress p = {0, 0, 1, 0, 0};
  Progress q = {0, 3, 1, 0, 0};
  qwenrt_session* a = NewProgressSession(model, &p);
  qwenrt_session* b = NewProgressSession(model, &q);
  int32_t tokens[16], held[16];
  size_t n_held = 0, va = 0, vb = 0;
  const float *la = NULL, *lb = NULL;
  qwenrt_report r;
  int i;
  for (i = 0; i < 16; ++i) tokens[i] = (int32_t)(i * 7 + 3) % 50;

  /* Uncancelled: once per batch of 4, done rising to total = the tokens prefilled. */
  memset(&r, 0, sizeof r);
  r.struct_size = sizeof r;
  ASSERT_OK(qwenrt_session_feed(a, tokens, 16, &r));
  EXPECT(p.calls == 4 && p.monotonic && p.total == 16 && p.last_done == 16);
  EXPECT(r.prefilled_tokens == 16);
  /* A second feed extending the first counts only the new tokens. */
  p.calls = 0;
  ASSERT_OK(qwenrt_session_feed(a, tokens, 16, &r)); /* nothing to prefill: no report */
  EXPECT(p.calls == 0);

  /* Cancelled on the third report: QWENRT_CANCELLED, the session holds the 12 tokens prefilled
   * (the one cancel path: as after qwenrt_session_cancel), and it is usable. */
  EXPECT_STATUS(qwenrt_session_feed(b, tokens, 16, NULL), QWENRT_CANCELLED, "cancel");
  EXPECT(q.calls == 3 && q.monotonic && q.last_done == 12 && q.total == 16);
  ASSERT_OK(qwenrt_session_get_tokens(b, held, 16, &n_held));
  EXPECT(n_held == 12 && memcmp(held, tokens, sizeof(int32_t) * 12) == 0);
  /* Feeding the rest reports 4 of 4 and ends where the uncancelled session did, bit for bit. */
  q.calls = 0;
  q.cancel_at = 0;
  ASSERT_OK(qwenrt_session_feed(b, tokens, 16, NULL));
  EXPECT(q.calls == 1 && q.last_done == 4 && q.total == 4);
  ASSERT_OK(qwenrt_session_get_logits(a, &la, &va));
  ASSERT_OK(qwenrt_session_get_logits(b, &lb, &vb));
  EXPECT(va == vb && va > 0 && memcmp(la, lb, va * sizeof(float)) == 0);
  qwenrt_session_free(a);
  qwenrt_session_free(b);
}

/* ---- the folded options equal the deprecated functions -----------------------------------------
 */

#if defined(__GNUC__)
/* This test calls the deprecated functions on purpose, to compare them with the params. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif

/* Logits after feeding the same tokens, for comparing two loads or KV types. */
static float* Logits(qwenrt_session* s, size_t* n) {
  int32_t tokens[12] = {1, 5, 9, 200, 17, 3, 44, 8, 100, 7, 2, 60};
  const float* l = NULL;
  float* copy;
  ASSERT_OK(qwenrt_session_feed(s, tokens, 12, NULL));
  ASSERT_OK(qwenrt_session_get_logits(s, &l, n));
  copy = (float*)malloc(*n * sizeof *copy);
  memcpy(copy, l, *n * sizeof *copy);
  return copy;
}

static void TestLoadOptions(void) {
  qwenrt_model_params mp;
  qwenrt_model_options o;
  qwenrt_model *a = NULL, *b = NULL;
  qwenrt_session *sa, *sb;
  float *la, *lb;
  size_t na = 0, nb = 0;
  char buf[64];
  size_t needed = 0;
  qwenrt_message msg;
  qwenrt_chat chat;

  ASSERT_OK(QWENRT_INIT(qwenrt_model_params_init, &mp));
  mp.read_file = true;
  mp.pack_weights = true;
  ASSERT_OK(qwenrt_model_load(MODEL_PATH, &mp, &a));
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.read_file = true;
  o.pack_weights = true;
  ASSERT_OK(qwenrt_model_load_ex(MODEL_PATH, NULL, &o, &b));
  sa = NewSession(a, QWENRT_KV_DEFAULT);
  sb = NewSession(b, QWENRT_KV_DEFAULT);
  la = Logits(sa, &na);
  lb = Logits(sb, &nb);
  EXPECT(na == nb && na > 0 && memcmp(la, lb, na * sizeof *la) == 0);
  free(la);
  free(lb);
  qwenrt_session_free(sa);
  qwenrt_session_free(sb);
  qwenrt_model_free(a);
  qwenrt_model_free(b);

  /* A template limit: the same refusal through either path. */
  memset(&msg, 0, sizeof msg);
  msg.struct_size = sizeof msg;
  msg.role = QWENRT_ROLE_USER;
  msg.content = "hi";
  ASSERT_OK(QWENRT_INIT(qwenrt_chat_init, &chat));
  chat.messages = &msg;
  chat.n_messages = 1;
  ASSERT_OK(QWENRT_INIT(qwenrt_model_params_init, &mp));
  mp.template_max_bytes = 16;
  ASSERT_OK(qwenrt_model_load(MODEL_PATH, &mp, &a));
  EXPECT_STATUS(qwenrt_chat_render(a, &chat, buf, sizeof buf, &needed), QWENRT_UNSUPPORTED, "16");
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.template_max_bytes = 16;
  ASSERT_OK(qwenrt_model_load_ex(MODEL_PATH, NULL, &o, &b));
  EXPECT_STATUS(qwenrt_chat_render(b, &chat, buf, sizeof buf, &needed), QWENRT_UNSUPPORTED, "16");
  qwenrt_model_free(a);
  qwenrt_model_free(b);
  a = NULL;
  mp.template_max_bytes = 0;
  mp.template_max_value_depth = -1;
  EXPECT_STATUS(qwenrt_model_load(MODEL_PATH, &mp, &a), QWENRT_INVALID_ARGUMENT,
                "template_max_value_depth");
  EXPECT(a == NULL);
}

static void TestKvType(qwenrt_model* model) {
  qwenrt_session *a = NewSession(model, QWENRT_KV_Q8_0), *b = NewSession(model, QWENRT_KV_DEFAULT);
  qwenrt_session* c = NULL;
  qwenrt_session_params sp;
  qwenrt_kv_type ka, kb;
  float *la, *lb;
  size_t na = 0, nb = 0;
  ASSERT_OK(qwenrt_session_set_kv_type(b, QWENRT_KV_Q8_0));
  ASSERT_OK(qwenrt_session_get_kv_type(a, &ka));
  ASSERT_OK(qwenrt_session_get_kv_type(b, &kb));
  EXPECT(ka == QWENRT_KV_Q8_0 && kb == QWENRT_KV_Q8_0);
  la = Logits(a, &na);
  lb = Logits(b, &nb);
  EXPECT(na == nb && memcmp(la, lb, na * sizeof *la) == 0);
  free(la);
  free(lb);
  qwenrt_session_free(a);
  qwenrt_session_free(b);

  ASSERT_OK(QWENRT_INIT(qwenrt_session_params_init, &sp));
  sp.kv_type = (qwenrt_kv_type)7;
  EXPECT_STATUS(qwenrt_session_create(model, &sp, &c), QWENRT_INVALID_ARGUMENT, "kv_type 7");
  EXPECT(c == NULL);

  /* memory_limit: a session that cannot fit in 1 byte is refused before it allocates. */
  ASSERT_OK(QWENRT_INIT(qwenrt_session_params_init, &sp));
  sp.memory_limit = 1;
  EXPECT_STATUS(qwenrt_session_create(model, &sp, &c), QWENRT_OUT_OF_MEMORY,
                "over the 1-byte limit");
  EXPECT(c == NULL);
  sp.memory_limit = (uint64_t)INT64_MAX + 1;
  EXPECT_STATUS(qwenrt_session_create(model, &sp, &c), QWENRT_INVALID_ARGUMENT, "above INT64_MAX");
  EXPECT(c == NULL);
  /* A struct from before memory_limit ends at the protected page: the field is not read. */
  {
    const size_t old_size = offsetof(qwenrt_session_params, memory_limit);
    Guarded g = GuardedAlloc(old_size);
    qwenrt_session_params* old = (qwenrt_session_params*)g.p;
    old->struct_size = (uint32_t)old_size;
    ASSERT_OK(qwenrt_session_params_init(old));
    ASSERT_OK(qwenrt_session_create(model, old, &c));
    qwenrt_session_free(c);
    c = NULL;
    GuardedFree(g);
  }
}

static void TestMemoryEstimate(qwenrt_model* model) {
  qwenrt_memory_estimate_params ep;
  qwenrt_memory_estimate e, e8;
  memset(&e, 0, sizeof e);
  memset(&e8, 0, sizeof e8);
  e.struct_size = e8.struct_size = sizeof e;
  ASSERT_OK(QWENRT_INIT(qwenrt_memory_estimate_params_init, &ep));
  EXPECT(ep.n_ctx == 0 && ep.kv_type == QWENRT_KV_DEFAULT && ep.n_sessions == 1 &&
         ep.checkpoint_budget == 0 && ep.n_threads == 0);
  ep.n_ctx = 300;
  ep.n_sessions = 2;
  ep.n_threads = 2;
  ASSERT_OK(qwenrt_model_estimate_memory(model, &ep, &e));
  EXPECT(e.weights > 0 && e.kv_per_session > 0 && e.state_per_session > 0 &&
         e.working_per_session > 0);
  EXPECT(e.per_session == e.kv_per_session + e.state_per_session + e.checkpoints_per_session +
                              e.working_per_session);
  EXPECT(e.total == e.weights + 2 * e.per_session);
  {
    /* More threads: more attention tiles. An out-struct of the size before working_per_session
     * gets the rest (per_session includes it all the same); a params struct of the size before
     * n_threads reads as n_threads 0. */
    qwenrt_memory_estimate more, old_out;
    qwenrt_memory_estimate_params old_ep = ep;
    memset(&more, 0, sizeof more);
    more.struct_size = sizeof more;
    ep.n_threads = 4;
    ASSERT_OK(qwenrt_model_estimate_memory(model, &ep, &more));
    EXPECT(more.working_per_session > e.working_per_session);
    ep.n_threads = 2;
    memset(&old_out, 0xab, sizeof old_out);
    old_out.struct_size = (uint32_t)offsetof(qwenrt_memory_estimate, working_per_session);
    ASSERT_OK(qwenrt_model_estimate_memory(model, &ep, &old_out));
    EXPECT(old_out.per_session == e.per_session && old_out.total == e.total);
    EXPECT(old_out.working_per_session == 0xababababababababull); /* past its struct_size */
    old_ep.struct_size = (uint32_t)offsetof(qwenrt_memory_estimate_params, n_threads);
    old_ep.n_threads = 3; /* past the old struct_size: not read */
    ASSERT_OK(qwenrt_model_estimate_memory(model, &old_ep, &more));
    ep.n_threads = 0;
    ASSERT_OK(qwenrt_model_estimate_memory(model, &ep, &e8));
    EXPECT(more.working_per_session == e8.working_per_session);
    ep.n_threads = -1;
    EXPECT_STATUS(qwenrt_model_estimate_memory(model, &ep, &e), QWENRT_INVALID_ARGUMENT,
                  "n_threads");
    ep.n_threads = 2;
    ASSERT_OK(qwenrt_model_estimate_memory(model, &ep, &e));
  }
  ep.kv_type = QWENRT_KV_F32; /* default is F16: twice the KV bytes */
  ASSERT_OK(qwenrt_model_estimate_memory(model, &ep, &e8));
  EXPECT(e8.kv_per_session == 2 * e.kv_per_session);
  /* A limit of exactly the estimate's per-session bytes lets a session of that context be created
   * and reserve all of it; a byte less does not. */
  {
    qwenrt_session_params sp;
    qwenrt_session* s = NULL;
    ASSERT_OK(QWENRT_INIT(qwenrt_session_params_init, &sp));
    sp.n_ctx = 300;
    sp.n_threads = ep.n_threads;
    sp.backend = QWENRT_BACKEND_CPU;
    sp.kv_type = QWENRT_KV_F32;
    sp.memory_limit = e8.per_session;
    ASSERT_OK(qwenrt_session_create(model, &sp, &s));
    ASSERT_OK(qwenrt_session_reserve(s, 300, 0));
    qwenrt_session_free(s);
    s = NULL;
    sp.memory_limit = e8.per_session - 1;
    if (qwenrt_session_create(model, &sp, &s) == QWENRT_OK) {
      EXPECT_STATUS(qwenrt_session_reserve(s, 300, 0), QWENRT_OUT_OF_MEMORY, "limit");
      qwenrt_session_free(s);
    }
  }
  ep.n_sessions = 0;
  EXPECT_STATUS(qwenrt_model_estimate_memory(model, &ep, &e), QWENRT_INVALID_ARGUMENT, "sessions");
  ep.n_sessions = 1;
  ep.n_ctx = -1;
  EXPECT_STATUS(qwenrt_model_estimate_memory(model, &ep, &e), QWENRT_INVALID_ARGUMENT, "context");
  ep.n_ctx = 0;
  ep.kv_type = (qwenrt_kv_type)7;
  EXPECT_STATUS(qwenrt_model_estimate_memory(model, &ep, &e), QWENRT_INVALID_ARGUMENT, "kv_type");
  EXPECT_STATUS(qwenrt_model_estimate_memory(model, NULL, NULL), QWENRT_INVALID_ARGUMENT, "out");
}

static void TestGenerateOptions(qwenrt_model* model) {
  qwenrt_session* s = NewSession(model, QWENRT_KV_DEFAULT);
  qwenrt_constraint *digits = NULL, *letters = NULL;
  qwenrt_generate_params gp;
  qwenrt_sampling_params samp = Sampling(7);
  Turn a, b;
  uint64_t seed;
  const char* p;

  ASSERT_OK(qwenrt_constraint_compile(QWENRT_CONSTRAINT_REGEX, "[0-9]{2,6}", 10, &digits));
  ASSERT_OK(qwenrt_constraint_compile(QWENRT_CONSTRAINT_REGEX, "[a-c]{2,6}", 10, &letters));

  /* Sampling: params->sampling == the sampling argument; both at once is refused. */
  ASSERT_OK(QWENRT_INIT(qwenrt_generate_params_init, &gp));
  gp.max_tokens = 24;
  a = ChatTurn(s, &gp, &samp, true, false);
  gp.sampling = &samp;
  b = ChatTurn(s, &gp, NULL, true, false);
  EXPECT(a.status == QWENRT_OK && SameTurn(&a, &b) && a.report.generated_tokens > 0);
  FreeTurn(&a);
  FreeTurn(&b);
  a = ChatTurn(s, &gp, &samp, true, false);
  EXPECT(a.status == QWENRT_INVALID_ARGUMENT && strstr(a.error, "twice") != NULL);
  FreeTurn(&a);

  /* Constraint (thinking off: the content starts at once). */
  for (seed = 1; seed <= 3; ++seed) {
    samp = Sampling(seed);
    ASSERT_OK(QWENRT_INIT(qwenrt_generate_params_init, &gp));
    gp.max_tokens = 40;
    gp.sampling = &samp;
    gp.constraint = digits;
    a = ChatTurn(s, &gp, NULL, false, false);
    gp.constraint = NULL;
    ASSERT_OK(qwenrt_session_set_constraint(s, digits));
    b = ChatTurn(s, &gp, NULL, false, false);
    ASSERT_OK(qwenrt_session_set_constraint(s, NULL));
    EXPECT(a.status == QWENRT_OK && SameTurn(&a, &b));
    EXPECT(strlen(a.content) >= 2 && strlen(a.content) <= 6);
    for (p = a.content; *p; ++p) EXPECT(*p >= '0' && *p <= '9');
    FreeTurn(&a);
    FreeTurn(&b);
  }

  /* A params constraint wins over the session's (deprecated) one. */
  samp = Sampling(11);
  ASSERT_OK(QWENRT_INIT(qwenrt_generate_params_init, &gp));
  gp.max_tokens = 40;
  gp.sampling = &samp;
  gp.constraint = letters;
  a = ChatTurn(s, &gp, NULL, false, false);
  ASSERT_OK(qwenrt_session_set_constraint(s, digits));
  b = ChatTurn(s, &gp, NULL, false, false);
  ASSERT_OK(qwenrt_session_set_constraint(s, NULL));
  EXPECT(a.status == QWENRT_OK && SameTurn(&a, &b) &&
         strspn(a.content, "abc") == strlen(a.content));
  FreeTurn(&a);
  FreeTurn(&b);

  /* Reasoning budget. */
  samp = Sampling(5);
  ASSERT_OK(QWENRT_INIT(qwenrt_generate_params_init, &gp));
  gp.max_tokens = 30;
  gp.sampling = &samp;
  gp.max_reasoning_tokens = 4;
  a = ChatTurn(s, &gp, NULL, true, false);
  gp.max_reasoning_tokens = 0;
  ASSERT_OK(qwenrt_session_set_reasoning_budget(s, 4));
  b = ChatTurn(s, &gp, NULL, true, false);
  ASSERT_OK(qwenrt_session_set_reasoning_budget(s, 0));
  EXPECT(a.status == QWENRT_OK && SameTurn(&a, &b) && a.report.reasoning_budget_hit == 1);
  FreeTurn(&a);
  FreeTurn(&b);
  gp.max_reasoning_tokens = -1;
  a = ChatTurn(s, &gp, NULL, true, false);
  EXPECT(a.status == QWENRT_INVALID_ARGUMENT && strstr(a.error, "max_reasoning_tokens") != NULL);
  FreeTurn(&a);

  /* Tool choice: REQUIRED and FUNCTION. */
  samp = Sampling(3);
  ASSERT_OK(QWENRT_INIT(qwenrt_generate_params_init, &gp));
  gp.max_tokens = 200;
  gp.sampling = &samp;
  gp.tool_choice = QWENRT_TOOL_CHOICE_FUNCTION;
  gp.tool_function = "pick";
  a = ChatTurn(s, &gp, NULL, false, true);
  gp.tool_choice = QWENRT_TOOL_CHOICE_FREE;
  gp.tool_function = NULL;
  ASSERT_OK(qwenrt_session_set_tool_choice(s, QWENRT_TOOL_CHOICE_FUNCTION, "pick"));
  b = ChatTurn(s, &gp, NULL, false, true);
  ASSERT_OK(qwenrt_session_set_tool_choice(s, QWENRT_TOOL_CHOICE_FREE, NULL));
  EXPECT(a.status == QWENRT_OK && SameTurn(&a, &b) && strstr(a.tool_calls, "pick") != NULL);
  FreeTurn(&a);
  FreeTurn(&b);
  gp.tool_choice = QWENRT_TOOL_CHOICE_REQUIRED;
  gp.constraint = digits;
  a = ChatTurn(s, &gp, NULL, false, true);
  EXPECT(a.status == QWENRT_INVALID_ARGUMENT);
  FreeTurn(&a);
  gp.constraint = NULL;
  gp.tool_function = "pick"; /* a name without FUNCTION */
  a = ChatTurn(s, &gp, NULL, false, true);
  EXPECT(a.status == QWENRT_INVALID_ARGUMENT && strstr(a.error, "params->tool_choice") != NULL);
  FreeTurn(&a);
  gp.tool_function = NULL;
  gp.tool_choice = (qwenrt_tool_choice)9;
  a = ChatTurn(s, &gp, NULL, false, true);
  EXPECT(a.status == QWENRT_INVALID_ARGUMENT);
  FreeTurn(&a);

  /* A freed constraint handle in the params is refused, not dereferenced. */
  qwenrt_constraint_free(letters);
  ASSERT_OK(QWENRT_INIT(qwenrt_generate_params_init, &gp));
  gp.max_tokens = 4;
  gp.constraint = letters;
  a = ChatTurn(s, &gp, NULL, false, false);
  EXPECT(a.status == QWENRT_INVALID_ARGUMENT && strstr(a.error, "constraint") != NULL);
  FreeTurn(&a);

  qwenrt_constraint_free(digits);
  qwenrt_session_free(s);
}

/* The engine reads the same params: a constrained turn equals the session's own. */
static void TestEngine(qwenrt_model* model) {
  qwenrt_engine_params ep;
  qwenrt_engine* e = NULL;
  qwenrt_session* s = NewSession(model, QWENRT_KV_DEFAULT);
  qwenrt_constraint* digits = NULL;
  qwenrt_generate_params gp;
  qwenrt_sampling_params samp = Sampling(21);
  qwenrt_message msg;
  qwenrt_chat chat;
  qwenrt_report r;
  Turn a;
  char* content;

  ASSERT_OK(qwenrt_constraint_compile(QWENRT_CONSTRAINT_REGEX, "[0-9]{2,6}", 10, &digits));
  ASSERT_OK(QWENRT_INIT(qwenrt_engine_params_init, &ep));
  ep.n_threads = 1;
  ASSERT_OK(qwenrt_engine_create(model, &ep, &e));
  ASSERT_OK(QWENRT_INIT(qwenrt_generate_params_init, &gp));
  gp.max_tokens = 40;
  gp.sampling = &samp;
  gp.constraint = digits;
  a = ChatTurn(s, &gp, NULL, false, false);
  ASSERT_OK(qwenrt_session_reset(s));
  memset(&msg, 0, sizeof msg);
  msg.struct_size = sizeof msg;
  msg.role = QWENRT_ROLE_USER;
  msg.content = "Say something";
  ASSERT_OK(QWENRT_INIT(qwenrt_chat_init, &chat));
  chat.messages = &msg;
  chat.n_messages = 1;
  chat.enable_thinking = false;
  ASSERT_OK(qwenrt_engine_submit_chat(e, s, &chat, NULL, &gp));
  memset(&r, 0, sizeof r);
  r.struct_size = sizeof r;
  ASSERT_OK(qwenrt_session_wait_turn(s, &r));
  content = Reply(s, QWENRT_PIECE_CONTENT);
  EXPECT(a.status == QWENRT_OK && strcmp(content, a.content) == 0 &&
         r.generated_tokens == a.report.generated_tokens);
  free(content);
  FreeTurn(&a);
  qwenrt_engine_free(e);
  qwenrt_constraint_free(digits);
  qwenrt_session_free(s);
}

#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

int main(void) {
  qwenrt_model* model = NULL;
  TestInitDefaults();
  TestInitErrors();
  TestInitLarger();
  ASSERT_OK(qwenrt_model_load(MODEL_PATH, NULL, &model));
  TestOldSizes(model);
  TestPrefillProgress(model);
  TestLoadOptions();
  TestKvType(model);
  TestMemoryEstimate(model);
  TestGenerateOptions(model);
  TestEngine(model);
  qwenrt_model_free(model);
  if (g_failures > 0) {
    fprintf(stderr, "capi_params_test: %d failure(s)\n", g_failures);
    return 1;
  }
  printf("capi_params_test: OK\n");
  return 0;
}

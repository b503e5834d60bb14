/* qwenrt.h: the stable C ABI of qwenrt, an embeddable inference library for Qwen3.5 hybrid models
 * (Gated DeltaNet + gated attention) in GGUF. This is the only header a C, Python, Rust, Go or C#
 * host needs; no internal type is exposed. The contract in prose is docs/c-abi.md.
 *
 * Usage (a two-turn chat; error checks shortened to `CHECK`):
 *
 *     qwenrt_model *model = NULL;
 *     qwenrt_model_params mp;
 *     CHECK(QWENRT_INIT(qwenrt_model_params_init, &mp));  // struct_size = sizeof mp, then defaults
 *     CHECK(qwenrt_model_load("Qwen3.5-4B-Q4_K_M.gguf", &mp, &model));
 *
 *     qwenrt_session *session = NULL;
 *     qwenrt_session_params sp;
 *     CHECK(QWENRT_INIT(qwenrt_session_params_init, &sp));
 *     CHECK(qwenrt_session_create(model, &sp, &session));
 *
 *     qwenrt_message msgs[3] = {{.struct_size = sizeof(qwenrt_message), .role = QWENRT_ROLE_USER,
 *                                .content = "Hello!"}};
 *     qwenrt_chat chat;
 *     CHECK(QWENRT_INIT(qwenrt_chat_init, &chat));        // thinking on, generation prompt on
 *     chat.messages = msgs; chat.n_messages = 1;
 *     qwenrt_generate_params gp;
 *     CHECK(QWENRT_INIT(qwenrt_generate_params_init, &gp));
 *     gp.callback = print_piece;                         // streams reasoning and content pieces
 *     CHECK(qwenrt_session_chat(session, &chat, NULL, &gp, NULL));   // NULL sampling = greedy
 *
 *     // Turn 2: send the whole conversation again; the session reuses what it has already seen.
 *     char reply[4096]; size_t needed;
 *     CHECK(qwenrt_session_get_reply(session, QWENRT_PIECE_CONTENT, reply, sizeof reply, &needed));
 *     msgs[1] = (qwenrt_message){sizeof(qwenrt_message), QWENRT_ROLE_ASSISTANT, reply};
 *     msgs[2] = (qwenrt_message){sizeof(qwenrt_message), QWENRT_ROLE_USER, "Tell me more."};
 *     chat.n_messages = 3;
 *     qwenrt_report report = {.struct_size = sizeof(qwenrt_report)};
 *     CHECK(qwenrt_session_chat(session, &chat, NULL, &gp, &report));
 *     printf("reused %lld, prefilled %lld\n", (long long)report.reused_tokens,
 *            (long long)report.prefilled_tokens);
 *
 *     qwenrt_session_free(session);
 *     qwenrt_model_free(model);
 *
 * Thread safety: a `qwenrt_model` is immutable once loaded and may be shared by any number of
 * sessions on any number of threads. A `qwenrt_session` is externally synchronised: one thread per
 * handle at a time (different sessions may run in parallel). The only session function that may be
 * called from another thread while a call is running is `qwenrt_session_cancel` (and
 * `qwenrt_session_get_backend`). Misuse is detected: another call from a second thread while one
 * runs, or a call that would change the session made from inside its own callback, returns
 * QWENRT_INVALID_ARGUMENT ("session is busy") and changes nothing; `qwenrt_session_free` from
 * inside a callback takes effect when the running call returns (docs/c-abi.md, "the busy rule"). A
 * `qwenrt_engine` runs turns of many sessions from any threads; its contract is with its functions
 * below ("Engine"). The library keeps no global mutable configuration (no global logger); the
 * last-error text is per thread. Each function below ends its comment with one tag: "Thread safety:
 * any thread.", "Thread safety: one thread per handle at a time." or "Thread safety: call before
 * any other function.".
 *
 * Conventions (see docs/c-abi.md):
 *  - Every fallible call returns `qwenrt_status` and writes results through out-parameters. On
 * failure `qwenrt_last_error()` describes what went wrong and out-parameters are left unchanged
 * unless the function says otherwise.
 *  - Params structs start with `uint32_t struct_size` and are initialised by the library through a
 *    pointer: set struct_size = sizeof(the struct) and call its `qwenrt_*_init` (QWENRT_INIT does
 *    both), then change fields. The library fills and reads exactly the struct_size bytes the
 *    caller's header knew: a smaller (older) struct works and its missing fields take their
 *    defaults; a larger (newer) struct is accepted only when every byte past the size this library
 *    knows is zero (its init zeroes them), otherwise QWENRT_INVALID_ARGUMENT. Fields are only ever
 *    appended. Out-structs (`qwenrt_model_info`, `qwenrt_report`) work the same way: set
 *    `struct_size` and the library fills what fits. docs/c-abi.md, "Params structs".
 *  - Caller buffers: on QWENRT_BUFFER_TOO_SMALL, `*needed` holds the required size and the buffer's
 *    contents are unspecified. Strings are written NUL-terminated and `*needed` counts the NUL.
 *  - Every create/load has a free; free(NULL) is a no-op. Text is UTF-8 (invalid UTF-8 is refused
 * with QWENRT_INVALID_ARGUMENT); token ids are `int32_t`.
 *  - Callbacks receive `void *user_data` last and return `bool` "continue"; returning false stops.
 *  - No C++ exception ever leaves the library, and it never aborts or exits on a recoverable error.
 */
#ifndef QWENRT_QWENRT_H_
#define QWENRT_QWENRT_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Release of this header; compare with qwenrt_version() at run time. */
#define QWENRT_VERSION_MAJOR 0
#define QWENRT_VERSION_MINOR 1
#define QWENRT_VERSION_PATCH 0
/* Revision of the binary interface this header describes. A library of revision N runs every host
 * built against a header of revision <= N, so a host checks qwenrt_abi_version() >=
 * QWENRT_ABI_VERSION to know the library has every function and struct field it uses.
 *   1: params returned by value (qwenrt_*_default_params), qwenrt_model_options, session setters.
 *   2: params initialised by pointer (qwenrt_*_init), load options in qwenrt_model_params, KV type
 *      in qwenrt_session_params, sampling / constraint / tool choice / reasoning budget in
 *      qwenrt_generate_params; the revision-1 functions stay as deprecated shims.
 *   3: speculative decoding: qwenrt_session_params.max_draft, qwenrt_report.drafted_tokens and
 *      accepted_tokens. */
#define QWENRT_ABI_VERSION 3
/* Suffix of the shared library's SONAME (libqwenrt.so.1). It changes only when a host built
 * against an older header could no longer run (a function removed or a layout changed). */
#define QWENRT_SOVERSION 1

#if defined(_WIN32)
#if defined(QWENRT_BUILDING_LIBRARY)
#define QWENRT_API __declspec(dllexport)
#elif defined(QWENRT_STATIC)
#define QWENRT_API
#else
#define QWENRT_API __declspec(dllimport)
#endif
#elif defined(__GNUC__) || defined(__clang__)
#define QWENRT_API __attribute__((visibility("default")))
#else
#define QWENRT_API
#endif

/* QWENRT_DEPRECATED(decl, "use qwenrt_x instead") marks a declaration that will go away in the next
 * ABI version. */
#if defined(__GNUC__) || defined(__clang__)
#define QWENRT_DEPRECATED(decl, hint) decl __attribute__((deprecated(hint)))
#elif defined(_MSC_VER)
#define QWENRT_DEPRECATED(decl, hint) __declspec(deprecated(hint)) decl
#else
#define QWENRT_DEPRECATED(decl, hint) decl
#endif

/* Sets p->struct_size to this header's size of *p and initialises *p with `init_fn`:
 *     qwenrt_session_params sp;
 *     QWENRT_INIT(qwenrt_session_params_init, &sp);
 * Evaluates to init_fn's qwenrt_status. */
#define QWENRT_INIT(init_fn, p) ((p)->struct_size = (uint32_t)sizeof(*(p)), init_fn(p))

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------------------------------
 */
/* Status, errors, versions */

/* Result of every fallible call. The numeric values are part of the ABI and never change. */
typedef enum qwenrt_status {
  QWENRT_OK = 0,
  QWENRT_INVALID_ARGUMENT =
      1,                  /* NULL or freed handle, bad struct_size, bad UTF-8, out-of-range value */
  QWENRT_IO = 2,          /* file cannot be opened, read or written */
  QWENRT_BAD_FORMAT = 3,  /* malformed GGUF or saved-session file */
  QWENRT_UNSUPPORTED = 4, /* valid input this build cannot handle (architecture, tensor type) */
  QWENRT_OUT_OF_MEMORY = 5,    /* host or device allocation failed */
  QWENRT_CONTEXT_FULL = 6,     /* the session's context (n_ctx) cannot hold the tokens */
  QWENRT_BUFFER_TOO_SMALL = 7, /* caller buffer too small; *needed has the size */
  QWENRT_DEVICE = 8,           /* accelerator error */
  QWENRT_CANCELLED = 9,        /* qwenrt_session_cancel or a progress callback stopped the call */
  QWENRT_INTERNAL = 10         /* a bug in qwenrt; the message says where */
} qwenrt_status;

/* Name of a status code ("OK", "INVALID_ARGUMENT", ...; "UNKNOWN" for other values). The string is
 * static. Thread safety: any thread. */
QWENRT_API const char* qwenrt_status_string(qwenrt_status status);

/* Text describing the calling thread's most recent failed call ("" if the most recent call
 * succeeded), e.g. "qwenrt_model_load: IO: cannot open 'x.gguf': No such file or directory". The
 * pointer stays valid until this thread's next qwenrt call; never NULL. Thread safety: any thread.
 */
QWENRT_API const char* qwenrt_last_error(void);

/* Library version "MAJOR.MINOR.PATCH" (static string). Thread safety: any thread. */
QWENRT_API const char* qwenrt_version(void);

/* QWENRT_ABI_VERSION the library was built with; a host compares it with the header's macro.
 * Thread safety: any thread. */
QWENRT_API int qwenrt_abi_version(void);

/* ------------------------------------------------------------------------------------------------
 */
/* Model */

typedef struct qwenrt_model qwenrt_model;     /* immutable after load; shareable */
typedef struct qwenrt_session qwenrt_session; /* one conversation's state; one thread at a time */
typedef struct qwenrt_constraint
    qwenrt_constraint;                      /* a compiled output constraint; immutable, shareable */
typedef struct qwenrt_engine qwenrt_engine; /* runs turns of many sessions in batches; any thread */

/* Where the forward pass runs. */
typedef enum qwenrt_backend {
  QWENRT_BACKEND_AUTO = 0, /* a backend every session call accepts (the engine included): the
                              CPU while CUDA batching is unverified; ask for CUDA explicitly */
  QWENRT_BACKEND_CPU = 1,  /* optimized CPU path */
  QWENRT_BACKEND_CUDA = 2, /* NVIDIA GPU; QWENRT_UNSUPPORTED when not built in or no device */
  QWENRT_BACKEND_REF = 3   /* scalar reference path (slow; for testing) */
} qwenrt_backend;

/* Load progress in [0, 1]; return false to cancel the load (it then fails with QWENRT_CANCELLED).
 * Called on the loading thread. */
typedef bool (*qwenrt_progress_callback)(float progress, void* user_data);

/* Prefill progress: `done` of `total` tokens this feed runs through the model (total excludes
 * reused positions). Called on the calling thread after every prefill batch, `done` increasing,
 * the last call with done == total on success. Return false to cancel the feed: the call fails
 * with QWENRT_CANCELLED exactly as after qwenrt_session_cancel. ABI 2. */
typedef bool (*qwenrt_prefill_progress_callback)(int64_t done, int64_t total, void* user_data);

typedef struct qwenrt_model_params {
  uint32_t struct_size; /* sizeof(qwenrt_model_params) */
  bool check_tensors;   /* validate every tensor's data (slower); default false */
  qwenrt_progress_callback progress_callback; /* may be NULL (default) */
  void* progress_user_data;                   /* passed to progress_callback */
  /* ---- ABI 2 (were qwenrt_model_options; zero keeps each default) ---- */
  /* Read the file into memory instead of mapping it. A mapped file that another process truncates
   * kills this process with SIGBUS on the next touch of a lost page, and one rewritten in place
   * changes the weights silently (docs/gguf.md); a read file cannot be reached. Costs the file's
   * size in memory and a full read at load. qwenrt_model_load only (memory loads copy anyway). */
  bool read_file;
  /* Pack the Q4_K / Q6_K (and, with AVX-512 VNNI, Q2_K / Q3_K / Q5_K / IQ4_XS / Q4_0 / Q4_1 /
   * Q5_0 / Q5_1 / IQ4_NL / MXFP4 / Q8_0) matrices into the row-interleaved layout of the CPU's
   * register-tiled matmul (docs/performance.md). In place for a mapped file: the file's pages of
   * the packed matrices are given back, so resident weights stay about the file's size; a file read
   * into memory (read_file, memory loads) keeps its copy beside the packed one. Default
   * (qwenrt_model_params_init): true where it is faster for prefill and decode alike (AVX-512
   * VNNI), false on AVX2 (prefill faster, decode slower) and elsewhere; a zeroed struct means
   * false. Logits are close to, not bit-identical with, an unpacked load's. */
  bool pack_weights;
  /* Bounds of the chat template engine: the template comes from the file and the conversation from
   * the caller, so both are bounded (docs/chat-template.md, "Limits"). A limit reached is an
   * QWENRT_INVALID_ARGUMENT naming it (a template over template_max_bytes makes chats UNSUPPORTED).
   */
  uint64_t template_max_bytes;        /* template source; 0 = default 1 MiB */
  uint64_t template_max_cost;         /* work units per render (~1 ns each) before the allowance of
                                         32 per byte of the conversation; 0 = default 50,000,000 */
  uint64_t template_max_output_bytes; /* rendered text; 0 = default 16 MiB */
  int32_t template_max_value_depth;   /* nesting of values and of messages / tools; 0 = default 128;
                                         negative is refused */
} qwenrt_model_params;

/* Fills *params with the defaults (no tensor check, no progress callback, mapped file, weights
 * packed where that is faster (pack_weights), default template limits) for the params->struct_size
 * bytes the caller's header knew (set it first, or use QWENRT_INIT); bytes past this library's
 * struct are zeroed. Returns QWENRT_INVALID_ARGUMENT (NULL params; struct_size 0, not a multiple of
 * 4, or smaller than the first version of the struct), *params unchanged then. Thread safety: any
 * thread. */
QWENRT_API qwenrt_status qwenrt_model_params_init(qwenrt_model_params* params);

/* Loads a GGUF model from a file (memory-mapped unless params->read_file).
 * params: NULL means defaults. *out_model receives a new handle owned by the caller (free it with
 * qwenrt_model_free).
 * Returns QWENRT_INVALID_ARGUMENT (NULL path/out_model, bad struct_size, a negative
 * template_max_value_depth), QWENRT_IO, QWENRT_BAD_FORMAT, QWENRT_UNSUPPORTED,
 * QWENRT_OUT_OF_MEMORY, QWENRT_DEVICE, QWENRT_CANCELLED (progress callback returned false). On
 * error *out_model is set to NULL and nothing is leaked. Thread safety: any thread. */
QWENRT_API qwenrt_status qwenrt_model_load(const char* path, const qwenrt_model_params* params,
                                           qwenrt_model** out_model);

/* Loads a GGUF model from `size` bytes at `data`. The library copies what it needs, so the buffer
 * may be freed as soon as the call returns (params->read_file does not apply). Errors and ownership
 * as qwenrt_model_load. Thread safety: any thread. */
QWENRT_API qwenrt_status qwenrt_model_load_from_memory(const void* data, size_t size,
                                                       const qwenrt_model_params* params,
                                                       qwenrt_model** out_model);

/* Deprecated (ABI 1): the load options before they moved into qwenrt_model_params (same fields,
 * same meaning). Zero-initialise it and set struct_size = sizeof(qwenrt_model_options). */
typedef struct qwenrt_model_options {
  uint32_t struct_size; /* sizeof(qwenrt_model_options) */
  bool read_file;
  bool pack_weights;
  uint64_t template_max_bytes;
  uint64_t template_max_cost;
  uint64_t template_max_output_bytes;
  int32_t template_max_value_depth;
} qwenrt_model_options;

/* Deprecated (ABI 1): qwenrt_model_load / qwenrt_model_load_from_memory with `options` (NULL = all
 * defaults); the options' fields replace those of `params`. Errors as those, plus
 * QWENRT_INVALID_ARGUMENT for a bad options->struct_size. Thread safety: any thread. */
QWENRT_DEPRECATED(QWENRT_API qwenrt_status qwenrt_model_load_ex(const char* path,
                                                                const qwenrt_model_params* params,
                                                                const qwenrt_model_options* options,
                                                                qwenrt_model** out_model),
                  "set the options in qwenrt_model_params and use qwenrt_model_load");
QWENRT_DEPRECATED(QWENRT_API qwenrt_status qwenrt_model_load_from_memory_ex(
                      const void* data, size_t size, const qwenrt_model_params* params,
                      const qwenrt_model_options* options, qwenrt_model** out_model),
                  "set the options in qwenrt_model_params and use "
                  "qwenrt_model_load_from_memory");

/* Releases the caller's reference. Sessions created from the model keep it alive until they are
 * freed, so the order of frees does not matter. NULL is a no-op. Thread safety: any thread (but not
 * while another thread still uses this handle in a call). */
QWENRT_API void qwenrt_model_free(qwenrt_model* model);

/* Facts about a loaded model. Out-struct: set struct_size before the call. */
typedef struct qwenrt_model_info {
  uint32_t struct_size;     /* set by the caller: sizeof(qwenrt_model_info) */
  const char* arch;         /* "qwen35" or "qwen35moe"; owned by the model */
  const char* name;         /* general.name, or "" */
  const char* fingerprint;  /* hex digest of arch, tensor shapes/types, tokenizer, template */
  int32_t n_vocab;          /* V */
  int32_t n_ctx_train;      /* trained context length */
  int32_t n_layer;          /* L */
  int32_t n_embd;           /* D */
  int32_t n_expert;         /* 0 for dense models */
  bool has_chat_template;   /* tokenizer.chat_template present */
  uint64_t n_params;        /* number of weights */
  uint64_t weight_bytes;    /* bytes of tensor data */
  int32_t eos_token;        /* end-of-sequence token id */
  int32_t eot_token;        /* end-of-turn token id (<|im_end|>) or -1 */
  int32_t n_files;          /* 1, or N for a split GGUF (*-00001-of-0000N.gguf) */
  int32_t n_unused_tensors; /* tensors present but not used: MTP (NextN) head, vision tower */
  uint64_t unused_bytes;    /* their data bytes (included in weight_bytes) */
  const char*
      unused; /* what they are, e.g. "MTP head: 15 tensors (1 layer)", or ""; owned by the model */
} qwenrt_model_info;

/* Fills *info (up to info->struct_size bytes). The strings live as long as the model.
 * Returns QWENRT_INVALID_ARGUMENT (NULL/freed model, NULL info, bad struct_size); *info unchanged
 * then. Thread safety: any thread. */
QWENRT_API qwenrt_status qwenrt_model_get_info(const qwenrt_model* model, qwenrt_model_info* info);

/* True if `token` ends a generation (end-of-sequence or end-of-turn). False for invalid tokens or
 * handles. Thread safety: any thread. */
QWENRT_API bool qwenrt_model_token_is_eog(const qwenrt_model* model, int32_t token);

/* ------------------------------------------------------------------------------------------------
 */
/* Text: tokenize, detokenize, chat rendering */

/* Tokenizes `text_len` bytes of UTF-8 (text need not be NUL-terminated). parse_special: match
 * control tokens such as <|im_start|> (user-defined tokens such as <think> are always matched).
 * Writes up to `capacity` ids to `tokens` (may be NULL when capacity is 0) and the count to
 * *n_tokens. Returns QWENRT_INVALID_ARGUMENT (NULL model/n_tokens, NULL text with text_len > 0,
 * invalid UTF-8), QWENRT_BUFFER_TOO_SMALL (*n_tokens = the count needed). Thread safety: any
 * thread. */
QWENRT_API qwenrt_status qwenrt_tokenize(const qwenrt_model* model, const char* text,
                                         size_t text_len, bool parse_special, int32_t* tokens,
                                         size_t capacity, size_t* n_tokens);

/* Turns token ids back into UTF-8 text, NUL-terminated in `buf`. render_special: write control
 * tokens
 * (<|im_end|>) as text; otherwise they are skipped. Byte sequences that are not valid UTF-8 are
 * replaced by U+FFFD. *needed = bytes written including the NUL (or the bytes required). Tokens
 * that spell byte 0 give a NUL inside the text (the inverse of qwenrt_tokenize, which takes a
 * length): the text is the *needed - 1 bytes before the terminator, not what strlen sees. Returns
 * QWENRT_INVALID_ARGUMENT (NULL model/needed, NULL tokens with n > 0, id outside [0, n_vocab)),
 * QWENRT_BUFFER_TOO_SMALL. Thread safety: any thread. */
QWENRT_API qwenrt_status qwenrt_detokenize(const qwenrt_model* model, const int32_t* tokens,
                                           size_t n, bool render_special, char* buf,
                                           size_t capacity, size_t* needed);

/* Chat messages. */
typedef enum qwenrt_role {
  QWENRT_ROLE_SYSTEM = 0,
  QWENRT_ROLE_USER = 1,
  QWENRT_ROLE_ASSISTANT = 2,
  QWENRT_ROLE_TOOL = 3 /* a tool result */
} qwenrt_role;

/* A tool call made by the assistant: the function's name and its arguments as a JSON object text.
 */
typedef struct qwenrt_tool_call {
  const char* name;
  const char* arguments_json; /* e.g. "{\"city\": \"Paris\"}"; NULL means {} */
} qwenrt_tool_call;

/* One message. struct_size must be the same in every element of an array (the library steps through
 * the array by it, so messages from an older header still work). */
typedef struct qwenrt_message {
  uint32_t struct_size; /* sizeof(qwenrt_message) */
  qwenrt_role role;
  const char* content;                /* UTF-8, NUL-terminated; NULL means "" */
  const char* reasoning;              /* assistant reasoning (<think> text) or NULL */
  const qwenrt_tool_call* tool_calls; /* assistant tool calls, or NULL */
  size_t n_tool_calls;
} qwenrt_message;

/* A conversation to render or feed. Borrowed: the library copies what it needs during the call. */
typedef struct qwenrt_chat {
  uint32_t struct_size;           /* sizeof(qwenrt_chat) */
  const qwenrt_message* messages; /* n_messages > 0 */
  size_t n_messages;
  const char* tools_json;     /* JSON array of tool definitions (OpenAI format) or NULL */
  bool enable_thinking;       /* default true: the reply starts with reasoning */
  bool add_generation_prompt; /* default true: end with "<|im_start|>assistant\n" (+ think tags) */
} qwenrt_chat;

/* Fills *chat with an empty conversation and the defaults above, for the chat->struct_size bytes
 * the caller's header knew (set it first, or use QWENRT_INIT). Errors as qwenrt_model_params_init.
 * Thread safety: any thread. */
QWENRT_API qwenrt_status qwenrt_chat_init(qwenrt_chat* chat);

/* Renders `chat` with the model's chat template (tokenizer.chat_template) into `buf` as UTF-8 text,
 * NUL-terminated; *needed = bytes including the NUL.
 * Returns QWENRT_INVALID_ARGUMENT (NULL/freed model, bad struct_size, no messages, invalid UTF-8,
 * an error the template raises, e.g. a system message that is not first; the message quotes it),
 * QWENRT_UNSUPPORTED (model without a chat template), QWENRT_BUFFER_TOO_SMALL.
 * Thread safety: any thread. */
QWENRT_API qwenrt_status qwenrt_chat_render(const qwenrt_model* model, const qwenrt_chat* chat,
                                            char* buf, size_t capacity, size_t* needed);

/* ------------------------------------------------------------------------------------------------
 */
/* Session */

/* How a chat's history becomes tokens on later turns. */
typedef enum qwenrt_history_mode {
  /* Re-render the whole conversation with the template each turn (as the model was trained); prefix
   * reuse and checkpoints make this cheap. Default. */
  QWENRT_HISTORY_TEMPLATE = 0,
  /* Keep the exact tokens of earlier turns (including reasoning) and append only the new messages.
   */
  QWENRT_HISTORY_TRANSCRIPT = 1
} qwenrt_history_mode;

/* Receives one trace line per step, e.g. "prefill 25 tokens from position 780 (checkpoint 780,
 * common prefix 783 of 805)". Called on the thread running the session call. */
typedef void (*qwenrt_log_callback)(const char* line, void* user_data);

/* Storage type of the attention KV cache (docs/kv-cache.md). */
typedef enum qwenrt_kv_type {
  QWENRT_KV_DEFAULT = -1, /* the backend's default (qwenrt_session_params.kv_type only) */
  QWENRT_KV_F32 = 0,      /* exact; the default of the REF and CUDA backends */
  QWENRT_KV_F16 =
      1, /* the CPU default: bit-identical to F32 there (the CPU path rounds K and V to f16) */
  QWENRT_KV_Q8_0 = 2 /* 8-bit blocks: about half the memory of F16, lossy */
} qwenrt_kv_type;

typedef struct qwenrt_session_params {
  uint32_t struct_size;        /* sizeof(qwenrt_session_params) */
  int32_t n_ctx;               /* context limit in tokens; 0 = the model's trained context */
  int32_t n_threads;           /* CPU threads; 0 = all hardware threads */
  qwenrt_backend backend;      /* default QWENRT_BACKEND_AUTO */
  uint64_t checkpoint_budget;  /* bytes for recurrent-state checkpoints; 0 = library default */
  int32_t checkpoint_interval; /* also checkpoint every K prefilled tokens; 0 = off (default) */
  qwenrt_history_mode history_mode;
  qwenrt_log_callback log_callback; /* trace lines; NULL = none */
  void* log_user_data;
  /* Make results independent of how tokens are split into prefill batches, so a reused prefix gives
   * logits bit-identical to a full recompute. Default true (costs ~3% of CPU prefill time); false
   * uses the chunked delta rule, equal within floating-point rounding. The CUDA backend is
   * split-invariant either way. */
  bool split_invariant;
  /* ---- ABI 2 ---- */
  /* Starts the ABI 2 fields past the ABI 1 struct's tail padding (a library that knows only the
   * older size checks the bytes past it, not the padding inside it). Leave it 0. */
  uint64_t reserved_abi2;
  /* Storage type of the KV cache; default QWENRT_KV_DEFAULT (the backend's). The CUDA backend keeps
   * F32 only and Q8_0 needs a head size that is a multiple of 32: otherwise the session is not
   * created (QWENRT_UNSUPPORTED). */
  qwenrt_kv_type kv_type;
  /* Called during every prefill of this session (qwenrt_session_feed, _feed_chat, _chat,
   * engine turns); NULL = none (default). Set here, not per call, so long prompts in any entry
   * point report without the host threading a callback through each one. A fork keeps it, as it
   * keeps log_callback. */
  qwenrt_prefill_progress_callback prefill_progress;
  void* prefill_progress_user_data; /* passed to prefill_progress */
  /* The most bytes this session may hold: KV pages + recurrent state + checkpoint budget + working
   * buffers, the terms of qwenrt_memory_estimate.per_session (which for n_ctx is exactly enough);
   * 0 = unlimited (default). Creation or KV growth that would pass it fails with
   * QWENRT_OUT_OF_MEMORY before allocating, the session unchanged (docs/memory.md). Read only when
   * struct_size covers it. */
  uint64_t memory_limit;
  /* Speculative decoding with the model's MTP (next-n) head (docs/speculative.md): up to this many
   * drafted tokens checked per verify pass, 0 = off (default), at most 14; the session picks 0 up
   * to this many per pass from the acceptance and pass costs it measures (drafting that does not
   * pay falls back to plain decoding). Replies are bit for bit
   * those without it (any sampling, constraints, tool choice, reasoning budget, stop strings);
   * qwenrt_report says how many drafts were kept. > 0 on a model without an MTP block:
   * QWENRT_INVALID_ARGUMENT at creation; a session that speculates runs alone (an engine's submit
   * refuses it with QWENRT_UNSUPPORTED), and on the CPU or REF backend (CUDA: UNSUPPORTED).
   * Since ABI 3; read only when struct_size covers it. */
  int32_t max_draft;
} qwenrt_session_params;

/* Fills *params with the defaults (n_ctx 0 = trained, n_threads 0 = all, AUTO backend, default
 * checkpoint budget, no interval, template history, no log, split_invariant true, the backend's
 * KV type) for the params->struct_size bytes the caller's header knew. Errors as
 * qwenrt_model_params_init. Thread safety: any thread. */
QWENRT_API qwenrt_status qwenrt_session_params_init(qwenrt_session_params* params);

/* Inputs of qwenrt_model_estimate_memory. Initialise with qwenrt_memory_estimate_params_init. */
typedef struct qwenrt_memory_estimate_params {
  uint32_t struct_size;       /* sizeof(qwenrt_memory_estimate_params) */
  int32_t n_ctx;              /* positions per session; 0 = the model's trained context */
  qwenrt_kv_type kv_type;     /* default QWENRT_KV_DEFAULT = the CPU backend's (F16) */
  int32_t n_sessions;         /* independent sessions; default 1 */
  uint64_t checkpoint_budget; /* per session, as qwenrt_session_params; 0 = library default */
  /* Appended in ABI 2 (read only when struct_size covers it): */
  int32_t n_threads; /* as qwenrt_session_params: 0 = all hardware threads (default); sizes the
                      * per-thread attention scratch of working_per_session */
} qwenrt_memory_estimate_params;

/* Bytes sessions of a model will hold (docs/memory.md). Out-struct: set struct_size first. */
typedef struct qwenrt_memory_estimate {
  uint32_t struct_size;             /* set by the caller: sizeof(qwenrt_memory_estimate) */
  uint64_t weights;                 /* resident weights: tensor data, less the pages packing
                                       released, plus the packed rows */
  uint64_t kv_per_session;          /* KV pages covering n_ctx positions */
  uint64_t state_per_session;       /* recurrent state */
  uint64_t checkpoints_per_session; /* checkpoint budget + one spare snapshot */
  uint64_t per_session;             /* KV + state + checkpoints + working */
  uint64_t total;                   /* weights + n_sessions * per_session */
  /* Appended in ABI 2 (written only when struct_size covers it; per_session includes it either
   * way): the forward pass's working buffers once the session has run at n_ctx positions
   * (activations for the session's ubatch, attention scratch for n_threads threads, the logits
   * row). */
  uint64_t working_per_session;
} qwenrt_memory_estimate;

/* Fills *params with the defaults (n_ctx 0, QWENRT_KV_DEFAULT, 1 session, default checkpoint
 * budget, n_threads 0) for the params->struct_size bytes the caller's header knew. Errors as
 * qwenrt_model_params_init. Thread safety: any thread. */
QWENRT_API qwenrt_status qwenrt_memory_estimate_params_init(qwenrt_memory_estimate_params* params);

/* What qwenrt_session_create with the same n_ctx, kv_type, checkpoint_budget and n_threads (CPU
 * backend) then allocates, per session and in all, computed by the library's own size functions,
 * the forward pass's working buffers included (docs/memory.md says what is not counted: the rows
 * of an all-logits prefill, per-thread matmul conversions, thread stacks). params: NULL means
 * defaults. Returns QWENRT_INVALID_ARGUMENT (NULL/freed model, NULL out, bad struct_size, negative
 * n_ctx or n_threads, n_sessions < 1, not a kv_type), QWENRT_UNSUPPORTED (Q8_0 with a head size
 * not a multiple of 32). Thread safety: any thread. */
QWENRT_API qwenrt_status qwenrt_model_estimate_memory(const qwenrt_model* model,
                                                      const qwenrt_memory_estimate_params* params,
                                                      qwenrt_memory_estimate* out);

/* Creates an empty session on `model` (the session holds a reference to the model).
 * params: NULL means defaults. *out_session receives a handle the caller frees with
 * qwenrt_session_free. Returns QWENRT_INVALID_ARGUMENT (NULL/freed model, NULL out_session, bad
 * struct_size, negative n_ctx or n_threads, not a kv_type), QWENRT_UNSUPPORTED (backend not built
 * in, a KV type the backend cannot store),
 * QWENRT_OUT_OF_MEMORY (also: over params->memory_limit), QWENRT_DEVICE. On error *out_session is
 * NULL. Thread safety: any thread. */
QWENRT_API qwenrt_status qwenrt_session_create(qwenrt_model* model,
                                               const qwenrt_session_params* params,
                                               qwenrt_session** out_session);

/* Frees the session and all its state. NULL is a no-op; a handle that was already freed is ignored
 * when detected. Thread safety: one thread per handle at a time. */
QWENRT_API void qwenrt_session_free(qwenrt_session* session);

/* Allocates now what growing to n_positions tokens would allocate (KV pages, and on the CPU the
 * forward pass's buffers for a context that long), so a host learns at once whether a long
 * conversation fits. touch != 0 also writes the new KV pages so the operating system commits them
 * now (Linux maps untouched memory lazily). Transcript, state and logits are unchanged. Returns
 * QWENRT_INVALID_ARGUMENT (NULL/freed session, n_positions < 0), QWENRT_CONTEXT_FULL (n_positions >
 * n_ctx), QWENRT_OUT_OF_MEMORY (also: over qwenrt_session_params.memory_limit; nothing allocated).
 * Thread safety: one thread per handle at a time. */
QWENRT_API qwenrt_status qwenrt_session_reserve(qwenrt_session* session, int32_t n_positions,
                                                int32_t touch);

/* Forgets everything: transcript, state, checkpoints, last reply and report (the session is as
 * new). Returns QWENRT_INVALID_ARGUMENT (NULL/freed session). Thread safety: one thread per handle
 * at a time. */
QWENRT_API qwenrt_status qwenrt_session_reset(qwenrt_session* session);

/* Number of tokens the session's state holds (the transcript length); -1 for an invalid handle.
 * Thread safety: one thread per handle at a time. */
QWENRT_API int64_t qwenrt_session_n_tokens(const qwenrt_session* session);

/* The backend the session runs on: CPU, CUDA or REF (never AUTO: that resolves at creation).
 * Returns QWENRT_INVALID_ARGUMENT (NULL/freed session, NULL backend). Thread safety: any thread. */
QWENRT_API qwenrt_status qwenrt_session_get_backend(const qwenrt_session* session,
                                                    qwenrt_backend* backend);

/* Copies the transcript (the exact token ids the state holds) into `tokens`; *n_tokens = its
 * length. Returns QWENRT_INVALID_ARGUMENT, QWENRT_BUFFER_TOO_SMALL. Thread safety: one thread per
 * handle at a time. */
QWENRT_API qwenrt_status qwenrt_session_get_tokens(const qwenrt_session* session, int32_t* tokens,
                                                   size_t capacity, size_t* n_tokens);

/* Why a generation ended. */
typedef enum qwenrt_stop_reason {
  QWENRT_STOP_NONE = 0, /* no generation yet */
  QWENRT_STOP_EOG = 1,  /* the model produced an end-of-generation token (not part of the reply) */
  QWENRT_STOP_MAX_TOKENS = 2,  /* max_tokens reached */
  QWENRT_STOP_STRING = 3,      /* a stop string matched */
  QWENRT_STOP_CALLBACK = 4,    /* the stream callback returned false */
  QWENRT_STOP_CONTEXT_FULL = 5 /* n_ctx reached */
} qwenrt_stop_reason;

/* Why less than the common prefix could be reused by the last feed. */
typedef enum qwenrt_miss_reason {
  QWENRT_MISS_NONE = 0,          /* everything in common with the transcript was reused */
  QWENRT_MISS_EMPTY = 1,         /* the session held nothing (first turn, after reset) */
  QWENRT_MISS_NO_CHECKPOINT = 2, /* the prefix diverged inside the transcript and no checkpoint lay
                                    at or before the divergence, closer than the one used */
  QWENRT_MISS_OTHER = 3          /* see the report's trace line */
} qwenrt_miss_reason;

/* What the last step did (a feed and the generation that followed it). Out-struct: set struct_size.
 */
typedef struct qwenrt_report {
  uint32_t struct_size;     /* set by the caller: sizeof(qwenrt_report) */
  int64_t prompt_tokens;    /* tokens in the sequence fed */
  int64_t common_prefix;    /* tokens it shares with the transcript held before */
  int64_t reused_tokens;    /* tokens whose state was kept (not recomputed) */
  int64_t prefilled_tokens; /* tokens run through the model by the feed */
  int64_t checkpoint_pos;   /* position of the checkpoint restored, or -1 */
  qwenrt_miss_reason miss_reason;
  int32_t n_checkpoints;          /* checkpoints held after the step */
  uint64_t checkpoint_bytes;      /* bytes those checkpoints hold */
  uint64_t state_bytes;           /* bytes of KV cache + recurrent state */
  int64_t generated_tokens;       /* tokens generated after the feed (0 if none) */
  qwenrt_stop_reason stop_reason; /* why that generation ended (QWENRT_STOP_NONE if none) */
  double prefill_ms;              /* time of the feed */
  double ttft_ms;   /* feed + first generated token (= prefill_ms when nothing generated) */
  double decode_ms; /* time of the generation after the first token */
  double decode_tokens_per_s; /* generated tokens per second after the first one; 0 if < 2 tokens */
  int64_t reasoning_tokens;   /* generated tokens inside <think>...</think> (markers included) */
  int32_t reasoning_budget_hit; /* 1 when max_reasoning_tokens closed the reasoning, else 0 */
  int64_t forced_tokens; /* tokens the constraint forced (the only one allowed), fed unsampled */
  /* Since ABI 3 (written only when struct_size covers them): speculative decoding
   * (qwenrt_session_params.max_draft > 0): drafted tokens checked, and those kept (each saved a
   * decode step); accepted / drafted is the acceptance rate. */
  int64_t drafted_tokens;
  int64_t accepted_tokens;
} qwenrt_report;

/* Fills *report for the last step (all zero, checkpoint_pos -1, before any step).
 * Returns QWENRT_INVALID_ARGUMENT (NULL/freed session, NULL report, bad struct_size).
 * Thread safety: one thread per handle at a time. */
QWENRT_API qwenrt_status qwenrt_session_get_report(const qwenrt_session* session,
                                                   qwenrt_report* report);

/* The last step's one-line trace, NUL-terminated; *needed counts the NUL.
 * Returns QWENRT_INVALID_ARGUMENT, QWENRT_BUFFER_TOO_SMALL. Thread safety: one thread per handle at
 * a time. */
QWENRT_API qwenrt_status qwenrt_session_get_report_line(const qwenrt_session* session, char* buf,
                                                        size_t capacity, size_t* needed);

/* Makes the session hold exactly `tokens` (the full sequence, not a suffix): keeps the longest
 * common prefix with the transcript, restores the newest checkpoint at or before it, and prefills
 * the rest. Afterwards the logits of the last token are available. report: NULL or an out-struct as
 * for qwenrt_session_get_report. Returns QWENRT_INVALID_ARGUMENT (NULL/freed session, n == 0, token
 * id outside the vocabulary), QWENRT_CONTEXT_FULL (n > n_ctx), QWENRT_CANCELLED,
 * QWENRT_OUT_OF_MEMORY, QWENRT_DEVICE. After an error the session holds a prefix of `tokens`
 * (possibly empty) whose state is exact, and stays usable. Thread safety: one thread per handle at
 * a time. */
QWENRT_API qwenrt_status qwenrt_session_feed(qwenrt_session* session, const int32_t* tokens,
                                             size_t n, qwenrt_report* report);

/* Renders `chat` (history per the session's history mode), tokenizes it and feeds it as
 * qwenrt_session_feed does, placing checkpoints at the turn boundaries so the next turn reuses this
 * one. Usually followed by qwenrt_session_generate. Errors: those of qwenrt_chat_render (except
 * BUFFER_TOO_SMALL) and qwenrt_session_feed; QWENRT_INVALID_ARGUMENT for an empty conversation.
 * Thread safety: one thread per handle at a time. */
QWENRT_API qwenrt_status qwenrt_session_feed_chat(qwenrt_session* session, const qwenrt_chat* chat,
                                                  qwenrt_report* report);

/* Logits of the last token fed or generated: *out_logits points to n_vocab floats owned by the
 * session, valid until the next call that changes the session (feed, generate, reset, load, free).
 * Returns QWENRT_INVALID_ARGUMENT (NULL/freed session or out-params; the session holds no tokens).
 * Thread safety: one thread per handle at a time. */
QWENRT_API qwenrt_status qwenrt_session_get_logits(const qwenrt_session* session,
                                                   const float** out_logits, size_t* n_vocab);

/* ------------------------------------------------------------------------------------------------
 */
/* Generation */

typedef struct qwenrt_sampling_params {
  uint32_t struct_size;    /* sizeof(qwenrt_sampling_params) */
  float temperature;       /* 0 = greedy (default) */
  int32_t top_k;           /* 0 = off */
  float top_p;             /* 1 = off */
  float min_p;             /* 0 = off */
  float repeat_penalty;    /* 1 = off */
  int32_t repeat_last_n;   /* window of the penalties; default 64 */
  float presence_penalty;  /* 0 = off */
  float frequency_penalty; /* 0 = off */
  uint64_t seed;           /* default 0; the same seed gives the same tokens */
} qwenrt_sampling_params;

/* Fills *params with the greedy defaults above for the params->struct_size bytes the caller's
 * header knew. Errors as qwenrt_model_params_init. Thread safety: any thread. */
QWENRT_API qwenrt_status qwenrt_sampling_params_init(qwenrt_sampling_params* params);

/* What a streamed piece of the reply is. */
typedef enum qwenrt_piece_kind {
  QWENRT_PIECE_CONTENT = 0,   /* the answer */
  QWENRT_PIECE_REASONING = 1, /* text inside <think>...</think> */
  QWENRT_PIECE_TOOL_CALL = 2  /* one parsed tool call as JSON: {"name": ..., "arguments": {...}} */
} qwenrt_piece_kind;

/* Receives the reply as it is generated: `text` is `len` bytes of complete UTF-8 (never half a
 * character), NUL-terminated, valid only during the call. Return false to stop the generation (it
 * then ends with QWENRT_OK and stop reason QWENRT_STOP_CALLBACK). Called on the generating thread;
 * it may call qwenrt_session_cancel but no other function on this session. */
typedef bool (*qwenrt_stream_callback)(qwenrt_piece_kind kind, const char* text, size_t len,
                                       void* user_data);

/* What qwenrt_constraint_compile reads. */
typedef enum qwenrt_constraint_kind {
  QWENRT_CONSTRAINT_GBNF = 0,        /* llama.cpp's GBNF grammar syntax; the start rule is `root` */
  QWENRT_CONSTRAINT_JSON_SCHEMA = 1, /* a JSON Schema (draft 2020-12 subset: docs/constraints.md) */
  QWENRT_CONSTRAINT_JSON_SCHEMA_COMPACT = 2, /* the same, without whitespace between JSON tokens */
  QWENRT_CONSTRAINT_REGEX = 3                /* a regular expression the whole content must match */
} qwenrt_constraint_kind;

/* Compiles `text` (`len` bytes of UTF-8) into *out_constraint, freed with qwenrt_constraint_free.
 * Returns QWENRT_INVALID_ARGUMENT (NULL out/text, bad kind, invalid UTF-8, and compile errors: a
 * GBNF error names line and column, a schema error the JSON pointer and the keyword that cannot be
 * enforced exactly — never silently ignored), QWENRT_OUT_OF_MEMORY. Thread safety: any thread. */
QWENRT_API qwenrt_status qwenrt_constraint_compile(qwenrt_constraint_kind kind, const char* text,
                                                   size_t len, qwenrt_constraint** out_constraint);

/* Frees a constraint; NULL is a no-op. Generations and sessions using it keep their own reference.
 * Thread safety: any thread. */
QWENRT_API void qwenrt_constraint_free(qwenrt_constraint* constraint);

/* How a chat with tools may call them (qwenrt_generate_params.tool_choice). */
typedef enum qwenrt_tool_choice {
  QWENRT_TOOL_CHOICE_FREE = 0, /* the default: tool calls are not constrained */
  QWENRT_TOOL_CHOICE_NONE = 1, /* no tool call: <tool_call> is never sampled */
  QWENRT_TOOL_CHOICE_AUTO =
      2, /* free text until the model opens <tool_call>; the calls from there are
            constrained to the tool-call format and each function's parameters */
  QWENRT_TOOL_CHOICE_REQUIRED = 3, /* the content is one or more constrained tool calls */
  QWENRT_TOOL_CHOICE_FUNCTION =
      4 /* the content is one or more constrained calls of `tool_function` */
} qwenrt_tool_choice;

typedef struct qwenrt_generate_params {
  uint32_t struct_size; /* sizeof(qwenrt_generate_params) */
  int32_t max_tokens;   /* stop after this many tokens; default 512; -1 = until context full */
  const char* const* stop_strings; /* stop when the content ends with one of these (not included) */
  size_t n_stop_strings;
  qwenrt_stream_callback callback; /* NULL = no streaming (read the reply with get_reply) */
  void* user_data;
  /* ---- ABI 2 (were the call's sampling argument and the session setters; zero = default) ---- */
  /* Sampling; NULL = the call's `sampling` argument, greedy when that is NULL too (giving both is
   * QWENRT_INVALID_ARGUMENT). Borrowed during the call. */
  const qwenrt_sampling_params* sampling;
  /* The reply's content must match this constraint (NULL = free text): tokens that cannot continue
   * it are masked after the penalties, and the reply ends only where it is complete. Reasoning is
   * free; the constraint starts after </think>. The generation keeps its own reference, so one
   * constraint may serve any number of sessions and turns. */
  const qwenrt_constraint* constraint;
  /* How a chat with tools may call them (tools_json). With AUTO / REQUIRED / FUNCTION every tool
   * call the reply emits parses (QWENRT_PIECE_TOOL_CALL has its name and arguments) and its
   * arguments match the function's `parameters` schema; reasoning stays free and REQUIRED /
   * FUNCTION start after </think>. These three exclude `constraint` (QWENRT_INVALID_ARGUMENT when
   * both are set), and tools that cannot be compiled (no tools, unknown function, a schema keyword
   * that cannot be enforced) are refused with QWENRT_INVALID_ARGUMENT naming the tool, parameter
   * and keyword. Default QWENRT_TOOL_CHOICE_FREE. */
  qwenrt_tool_choice tool_choice;
  const char* tool_function; /* the function for QWENRT_TOOL_CHOICE_FUNCTION, else NULL */
  /* The thinking budget: at most this many reasoning tokens; when reached, the reasoning is closed
   * the way the chat template writes it ("\n</think>\n\n", fed without sampling) and the answer
   * follows; the report says so (reasoning_budget_hit). 0 = no limit (default). Counts against
   * max_tokens. */
  int32_t max_reasoning_tokens;
} qwenrt_generate_params;

/* Fills *params with the defaults (512 tokens, no stop strings, no callback, greedy, no constraint,
 * tool choice FREE, no reasoning budget) for the params->struct_size bytes the caller's header
 * knew. Errors as qwenrt_model_params_init. Thread safety: any thread. */
QWENRT_API qwenrt_status qwenrt_generate_params_init(qwenrt_generate_params* params);

/* Deprecated (ABI 1) session settings: each sets, for the following generations of this session,
 * the value a qwenrt_generate_params field takes when the caller leaves that field at its default
 * (zero): a generate params' non-zero constraint, tool_choice or max_reasoning_tokens wins (and a
 * struct from an ABI 1 header, which has none of them, always takes the session's). The session
 * keeps its own reference to the constraint. Forks copy them. Returns QWENRT_INVALID_ARGUMENT
 * (NULL/freed session or constraint, negative budget, bad choice, a function name given or
 * missing). Thread safety: one thread per handle at a time. */
QWENRT_DEPRECATED(QWENRT_API qwenrt_status qwenrt_session_set_constraint(
                      qwenrt_session* session, const qwenrt_constraint* constraint),
                  "use qwenrt_generate_params.constraint");
QWENRT_DEPRECATED(QWENRT_API qwenrt_status qwenrt_session_set_reasoning_budget(
                      qwenrt_session* session, int32_t max_reasoning_tokens),
                  "use qwenrt_generate_params.max_reasoning_tokens");
QWENRT_DEPRECATED(QWENRT_API qwenrt_status qwenrt_session_set_tool_choice(
                      qwenrt_session* session, qwenrt_tool_choice choice,
                      const char* function_name),
                  "use qwenrt_generate_params.tool_choice and tool_function");

/* Generates a reply from the session's current state (after a feed): samples a token, streams it,
 * evaluates it, repeats. The transcript grows with every token evaluated; the end-of-generation
 * token is sampled but not evaluated. If the last feed was a chat whose generation prompt opened a
 * <think> block, the first pieces are reasoning. sampling: NULL = params->sampling (greedy when
 * that is NULL too). params: NULL = defaults.
 * stop_reason: NULL or where to write why it stopped. The reply is kept for
 * qwenrt_session_get_reply. Returns QWENRT_INVALID_ARGUMENT (NULL/freed session, bad struct_size,
 * invalid UTF-8 stop string, the session holds no tokens), QWENRT_CANCELLED, QWENRT_OUT_OF_MEMORY,
 * QWENRT_DEVICE. Reaching n_ctx or max_tokens is not an error. After an error (or cancel) the
 * session holds the prompt and the tokens generated so far, with exact state, and can continue.
 * Thread safety: one thread per handle at a time. */
QWENRT_API qwenrt_status qwenrt_session_generate(qwenrt_session* session,
                                                 const qwenrt_sampling_params* sampling,
                                                 const qwenrt_generate_params* params,
                                                 qwenrt_stop_reason* stop_reason);

/* qwenrt_session_feed_chat followed by qwenrt_session_generate; `report` (NULL or an out-struct)
 * covers both. Errors and state after an error: those of the two calls. Thread safety: one thread
 * per handle at a time. */
QWENRT_API qwenrt_status qwenrt_session_chat(qwenrt_session* session, const qwenrt_chat* chat,
                                             const qwenrt_sampling_params* sampling,
                                             const qwenrt_generate_params* params,
                                             qwenrt_report* report);

/* The last generated reply, split as streamed: kind CONTENT (the answer, tool-call markup removed),
 * REASONING, or TOOL_CALL (a JSON array of the calls, "[]" if none). NUL-terminated; *needed counts
 * the NUL. Returns QWENRT_INVALID_ARGUMENT (NULL/freed session, unknown kind),
 * QWENRT_BUFFER_TOO_SMALL. Thread safety: one thread per handle at a time. */
QWENRT_API qwenrt_status qwenrt_session_get_reply(const qwenrt_session* session,
                                                  qwenrt_piece_kind kind, char* buf,
                                                  size_t capacity, size_t* needed);

/* Asks the call running on `session` (feed, feed_chat, generate, chat) to stop at the next token or
 * prefill batch boundary; it then returns QWENRT_CANCELLED with the session consistent. If no call
 * is running, the next such call is cancelled as soon as it starts. The request is consumed by the
 * call it cancels. Returns QWENRT_INVALID_ARGUMENT for a NULL/freed session. Thread safety: any
 * thread. */
QWENRT_API qwenrt_status qwenrt_session_cancel(qwenrt_session* session);

/* ------------------------------------------------------------------------------------------------
 */
/* Checkpoints, fork, save / load */

/* Asks for a checkpoint (a snapshot of the recurrent state) at token position `pos` (the state
 * after the first `pos` tokens): taken now if pos equals the transcript length, else during the
 * next feed that passes through `pos` (a prefill batch is split there so the snapshot is exact).
 * Positions past the transcript are remembered until a feed reaches them. Returns
 * QWENRT_INVALID_ARGUMENT (NULL/freed session, pos < 1), QWENRT_OUT_OF_MEMORY. Thread safety: one
 * thread per handle at a time. */
QWENRT_API qwenrt_status qwenrt_session_checkpoint_at(qwenrt_session* session, int64_t pos);

/* Deprecated (ABI 1; set qwenrt_session_params.checkpoint_budget at creation): sets the checkpoint
 * memory budget in bytes (0 = library default); older checkpoints are evicted (least recently used
 * first, never the newest of a turn) until the rest fit. Returns QWENRT_INVALID_ARGUMENT. Thread
 * safety: one thread per handle at a time. */
QWENRT_DEPRECATED(QWENRT_API qwenrt_status
                      qwenrt_session_set_checkpoint_budget(qwenrt_session* session, uint64_t bytes),
                  "use qwenrt_session_params.checkpoint_budget");

/* Deprecated (ABI 1; set qwenrt_session_params.kv_type at creation): changes the KV storage
 * type, converting what the session holds (a fork made later shares the converted pages). Returns
 * QWENRT_INVALID_ARGUMENT (NULL/freed session, not a qwenrt_kv_type), QWENRT_UNSUPPORTED (the CUDA
 * backend keeps F32 only; Q8_0 needs a head size that is a multiple of 32), QWENRT_OUT_OF_MEMORY;
 * on error the session is unchanged. Thread safety: one thread per handle at a time. */
QWENRT_DEPRECATED(QWENRT_API qwenrt_status qwenrt_session_set_kv_type(qwenrt_session* session,
                                                                      qwenrt_kv_type type),
                  "use qwenrt_session_params.kv_type");
/* The KV storage type. Returns QWENRT_INVALID_ARGUMENT (NULL/freed session, NULL type). Thread
 * safety: one thread per handle at a time. */
QWENRT_API qwenrt_status qwenrt_session_get_kv_type(const qwenrt_session* session,
                                                    qwenrt_kv_type* type);

/* Copies the positions of the checkpoints held, ascending, into `positions`; *n = their number.
 * Returns QWENRT_INVALID_ARGUMENT, QWENRT_BUFFER_TOO_SMALL. Thread safety: one thread per handle at
 * a time. */
QWENRT_API qwenrt_status qwenrt_session_get_checkpoints(const qwenrt_session* session,
                                                        int64_t* positions, size_t capacity,
                                                        size_t* n);

/* Creates *out_session, an independent copy of `session` (transcript, state, checkpoints, last
 * reply, settings); both continue independently. Returns QWENRT_INVALID_ARGUMENT,
 * QWENRT_OUT_OF_MEMORY, QWENRT_DEVICE; *out_session is NULL on error. Thread safety: one thread per
 * handle at a time (for `session`). */
QWENRT_API qwenrt_status qwenrt_session_fork(const qwenrt_session* session,
                                             qwenrt_session** out_session);

/* Saves the session (transcript, state, checkpoints, chat state) to `path`, atomically (a temporary
 * file renamed into place). The file carries a format version, the model fingerprint and a
 * checksum. Returns QWENRT_INVALID_ARGUMENT, QWENRT_IO, QWENRT_OUT_OF_MEMORY. Thread safety: one
 * thread per handle at a time. */
QWENRT_API qwenrt_status qwenrt_session_save_file(const qwenrt_session* session, const char* path);

/* Replaces the session's contents with a saved one (which must come from the same model: same
 * fingerprint). Returns QWENRT_INVALID_ARGUMENT (NULL/freed session, NULL path, a session saved
 * with a different model), QWENRT_IO, QWENRT_BAD_FORMAT (damaged, truncated or not a session file),
 * QWENRT_UNSUPPORTED (another format version), QWENRT_CONTEXT_FULL (saved session longer than
 * n_ctx), QWENRT_OUT_OF_MEMORY. On error the session is unchanged. Thread safety: one thread per
 * handle at a time. */
QWENRT_API qwenrt_status qwenrt_session_load_file(qwenrt_session* session, const char* path);

/* Saves the session into `buf` (format as the file); *needed = the blob's size in bytes.
 * Pass buf NULL / capacity 0 to ask for the size. Returns QWENRT_INVALID_ARGUMENT,
 * QWENRT_BUFFER_TOO_SMALL, QWENRT_OUT_OF_MEMORY. Thread safety: one thread per handle at a time. */
QWENRT_API qwenrt_status qwenrt_session_save_memory(const qwenrt_session* session, void* buf,
                                                    size_t capacity, size_t* needed);

/* As qwenrt_session_load_file, from `size` bytes at `data` (borrowed during the call).
 * Thread safety: one thread per handle at a time. */
QWENRT_API qwenrt_status qwenrt_session_load_memory(qwenrt_session* session, const void* data,
                                                    size_t size);

/* ---- Engine: many sessions' turns batched on one model ------------------------------------------
 * An engine runs chat turns of many sessions at once: each step of its worker thread evaluates the
 * next token of every session that is generating and prefill chunks of sessions that are feeding in
 * one forward pass (a per-step token budget keeps a long new prompt from stalling the others).
 * Each session's tokens, text and logits are bit-identical to qwenrt_session_chat alone.
 *
 * Thread safety (the engine contract):
 *  - qwenrt_engine_submit_chat, qwenrt_session_wait_turn and qwenrt_session_turn_done may be called
 *    from any thread, for different sessions at the same time; for one session, one thread at a
 *    time (as for every session call). qwenrt_engine_free: one thread, after no other call on the
 *    engine runs.
 *  - From submission until its turn ends, the session is in use by the engine: every other call on
 *    it from any thread returns QWENRT_INVALID_ARGUMENT ("session is busy"), except
 *    qwenrt_session_cancel (stops that turn only), qwenrt_session_wait_turn,
 * qwenrt_session_turn_done and qwenrt_session_get_backend. qwenrt_session_free meanwhile takes
 * effect when the turn ends.
 *  - Streaming callbacks run on the engine's worker thread, one at a time; a callback must not call
 *    into its own session (busy) nor wait for a turn of the same engine.
 *  - Errors are per session: a full context or a bad input gives that session's turn its status and
 *    never disturbs the others.
 * Sessions must be on the engine's model, on the CPU backend (QWENRT_BACKEND_CPU, or AUTO, which
 * never picks a backend the engine refuses) and split-invariant (the default). */

typedef struct qwenrt_engine_params {
  uint32_t struct_size; /* sizeof(qwenrt_engine_params) */
  int32_t n_threads;    /* CPU threads of the engine; 0 = all hardware threads */
  int32_t step_tokens;  /* token budget of one step (decode tokens + prefill chunks); default 512 */
  int32_t max_sessions; /* most sessions in one step (more wait their turn); default 16 */
} qwenrt_engine_params;

/* Fills *params with the defaults (all threads, 512 tokens per step, 16 sessions per step) for the
 * params->struct_size bytes the caller's header knew. Errors as qwenrt_model_params_init. Thread
 * safety: any thread. */
QWENRT_API qwenrt_status qwenrt_engine_params_init(qwenrt_engine_params* params);

/* Creates an engine on `model` with its worker thread. params: NULL means defaults.
 * Returns QWENRT_INVALID_ARGUMENT (NULL/freed model, NULL out_engine, bad struct_size, a value < 1
 * or negative n_threads), QWENRT_OUT_OF_MEMORY. On error *out_engine is NULL. Thread safety: any
 * thread. */
QWENRT_API qwenrt_status qwenrt_engine_create(qwenrt_model* model,
                                              const qwenrt_engine_params* params,
                                              qwenrt_engine** out_engine);

/* Cancels the turns still running, ends them (each wait returns QWENRT_CANCELLED; their sessions
 * stay consistent and usable), stops the worker and frees the engine. NULL is a no-op. Must not be
 * called from a streaming callback. Thread safety: one thread per handle at a time. */
QWENRT_API void qwenrt_engine_free(qwenrt_engine* engine);

/* Submits a turn of `session`: what qwenrt_session_chat does (same arguments, the same merge of
 * the deprecated session settings), run by the engine; returns at once. The turn's pieces stream to
 * params->callback on the engine's thread. Collect the turn with qwenrt_session_wait_turn before
 * submitting the next turn of the session. Returns QWENRT_INVALID_ARGUMENT (NULL/freed handles, a
 * session busy or with a turn not yet waited for, another model, a non-CPU or non split-invariant
 * session, bad chat or params), the planner's errors, QWENRT_CONTEXT_FULL (the prompt does not
 * fit), QWENRT_OUT_OF_MEMORY; on error nothing was submitted and the session is unchanged. Thread
 * safety: any thread (one per session at a time). */
QWENRT_API qwenrt_status qwenrt_engine_submit_chat(qwenrt_engine* engine, qwenrt_session* session,
                                                   const qwenrt_chat* chat,
                                                   const qwenrt_sampling_params* sampling,
                                                   const qwenrt_generate_params* params);

/* Blocks until the session's submitted turn ends and returns its status (what qwenrt_session_chat
 * would have returned); `report` (NULL or an out-struct) receives the turn's report. The turn is
 * then collected. Returns QWENRT_INVALID_ARGUMENT when the session has no submitted turn. Thread
 * safety: any thread (one per session at a time). */
QWENRT_API qwenrt_status qwenrt_session_wait_turn(qwenrt_session* session, qwenrt_report* report);

/* *done = whether the session's submitted turn has ended (then qwenrt_session_wait_turn returns at
 * once). Returns QWENRT_INVALID_ARGUMENT (NULL/freed session, NULL done, no submitted turn).
 * Thread safety: any thread. */
QWENRT_API qwenrt_status qwenrt_session_turn_done(const qwenrt_session* session, bool* done);

/* ---- Deprecated (ABI 1): defaults returned by value ---------------------------------------------
 * A struct returned by value cannot grow: a host built against an older header allocates the older
 * size for the result. The library therefore keeps exporting these six symbols with the ABI 1
 * layouts (hosts built against that header, and FFI hosts that declared those layouts, keep
 * working), and this header defines them as inline functions over the init functions, so that
 * source written against ABI 1 still compiles (with a deprecation warning) and gets the whole of
 * today's struct. */
#if !defined(QWENRT_NO_DEPRECATED_DEFAULTS)
#if defined(_MSC_VER) && !defined(__cplusplus)
#define QWENRT_STATIC_INLINE_ static __inline
#else
#define QWENRT_STATIC_INLINE_ static inline
#endif
QWENRT_DEPRECATED(QWENRT_STATIC_INLINE_ qwenrt_model_params qwenrt_model_default_params(void),
                  "use qwenrt_model_params_init");
QWENRT_DEPRECATED(QWENRT_STATIC_INLINE_ qwenrt_session_params qwenrt_session_default_params(void),
                  "use qwenrt_session_params_init");
QWENRT_DEPRECATED(QWENRT_STATIC_INLINE_ qwenrt_sampling_params qwenrt_sampling_default_params(void),
                  "use qwenrt_sampling_params_init");
QWENRT_DEPRECATED(QWENRT_STATIC_INLINE_ qwenrt_generate_params qwenrt_generate_default_params(void),
                  "use qwenrt_generate_params_init");
QWENRT_DEPRECATED(QWENRT_STATIC_INLINE_ qwenrt_engine_params qwenrt_engine_default_params(void),
                  "use qwenrt_engine_params_init");
QWENRT_DEPRECATED(QWENRT_STATIC_INLINE_ qwenrt_chat qwenrt_chat_default(void),
                  "use qwenrt_chat_init");

/* Each cannot fail: struct_size is this header's size, which every library accepts. */
#define QWENRT_DEFAULT_BY_VALUE_(type, init_fn) \
  type p;                                       \
  p.struct_size = (uint32_t)sizeof p;           \
  (void)init_fn(&p);                            \
  return p
QWENRT_STATIC_INLINE_ qwenrt_model_params qwenrt_model_default_params(void) {
  QWENRT_DEFAULT_BY_VALUE_(qwenrt_model_params, qwenrt_model_params_init);
}
QWENRT_STATIC_INLINE_ qwenrt_session_params qwenrt_session_default_params(void) {
  QWENRT_DEFAULT_BY_VALUE_(qwenrt_session_params, qwenrt_session_params_init);
}
QWENRT_STATIC_INLINE_ qwenrt_sampling_params qwenrt_sampling_default_params(void) {
  QWENRT_DEFAULT_BY_VALUE_(qwenrt_sampling_params, qwenrt_sampling_params_init);
}
QWENRT_STATIC_INLINE_ qwenrt_generate_params qwenrt_generate_default_params(void) {
  QWENRT_DEFAULT_BY_VALUE_(qwenrt_generate_params, qwenrt_generate_params_init);
}
QWENRT_STATIC_INLINE_ qwenrt_engine_params qwenrt_engine_default_params(void) {
  QWENRT_DEFAULT_BY_VALUE_(qwenrt_engine_params, qwenrt_engine_params_init);
}
QWENRT_STATIC_INLINE_ qwenrt_chat qwenrt_chat_default(void) {
  QWENRT_DEFAULT_BY_VALUE_(qwenrt_chat, qwenrt_chat_init);
}
#undef QWENRT_DEFAULT_BY_VALUE_
#undef QWENRT_STATIC_INLINE_
#endif /* !QWENRT_NO_DEPRECATED_DEFAULTS */

#ifdef __cplusplus
}
#endif

#endif /* QWENRT_QWENRT_H_ */

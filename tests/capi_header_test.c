/* Compiles qwenrt.h as strict C99 (-Wall -Wextra -Werror -pedantic) and checks the calls that need
 * no model: versions, status names, default params, the last-error contract and NULL-argument
 * handling. */
#include <stdio.h>
#include <string.h>

#include "qwenrt/qwenrt.h"

static int failures = 0;

#define EXPECT(cond)                                                      \
  do {                                                                    \
    if (!(cond)) {                                                        \
      fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                         \
    }                                                                     \
  } while (0)

/* A declaration the deprecation macro must accept in C. */
QWENRT_DEPRECATED(int qwenrt_header_test_old(void), "use something else");

/* Source written against ABI 1 still compiles (with deprecation warnings, silenced here) and the
 * inline by-value defaults equal what the init functions fill. */
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif
static void CheckDeprecatedDefaults(void) {
  qwenrt_session_params old_sp = qwenrt_session_default_params();
  qwenrt_generate_params old_gp = qwenrt_generate_default_params();
  qwenrt_engine_params old_ep = qwenrt_engine_default_params();
  qwenrt_model_params old_mp = qwenrt_model_default_params();
  qwenrt_sampling_params old_smp = qwenrt_sampling_default_params();
  qwenrt_chat old_chat = qwenrt_chat_default();
  qwenrt_session_params sp;
  qwenrt_generate_params gp;
  EXPECT(QWENRT_INIT(qwenrt_session_params_init, &sp) == QWENRT_OK);
  EXPECT(QWENRT_INIT(qwenrt_generate_params_init, &gp) == QWENRT_OK);
  EXPECT(old_sp.struct_size == sizeof old_sp && old_sp.kv_type == sp.kv_type &&
         old_sp.split_invariant == sp.split_invariant && old_sp.backend == sp.backend);
  EXPECT(old_gp.struct_size == sizeof old_gp && old_gp.max_tokens == gp.max_tokens &&
         old_gp.sampling == NULL && old_gp.tool_choice == gp.tool_choice);
  EXPECT(old_ep.struct_size == sizeof old_ep && old_ep.step_tokens == 512);
  EXPECT(old_mp.struct_size == sizeof old_mp && !old_mp.read_file);
  EXPECT(old_smp.struct_size == sizeof old_smp && old_smp.repeat_last_n == 64);
  EXPECT(old_chat.struct_size == sizeof old_chat && old_chat.enable_thinking);
}
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

int main(void) {
  char expect_version[32];
  qwenrt_model_params mp;
  qwenrt_session_params sp;
  qwenrt_sampling_params smp;
  qwenrt_generate_params gp;
  qwenrt_chat chat;
  qwenrt_model* model = NULL;

  EXPECT(QWENRT_INIT(qwenrt_model_params_init, &mp) == QWENRT_OK);
  EXPECT(QWENRT_INIT(qwenrt_session_params_init, &sp) == QWENRT_OK);
  EXPECT(QWENRT_INIT(qwenrt_sampling_params_init, &smp) == QWENRT_OK);
  EXPECT(QWENRT_INIT(qwenrt_generate_params_init, &gp) == QWENRT_OK);
  EXPECT(QWENRT_INIT(qwenrt_chat_init, &chat) == QWENRT_OK);
  CheckDeprecatedDefaults();

  sprintf(expect_version, "%d.%d.%d", QWENRT_VERSION_MAJOR, QWENRT_VERSION_MINOR,
          QWENRT_VERSION_PATCH);
  EXPECT(strcmp(qwenrt_version(), expect_version) == 0);
  EXPECT(qwenrt_abi_version() == QWENRT_ABI_VERSION && QWENRT_SOVERSION == 1);

  EXPECT(strcmp(qwenrt_status_string(QWENRT_OK), "OK") == 0);
  EXPECT(strcmp(qwenrt_status_string(QWENRT_CONTEXT_FULL), "CONTEXT_FULL") == 0);
  EXPECT(strcmp(qwenrt_status_string(QWENRT_INTERNAL), "INTERNAL") == 0);
  EXPECT(strcmp(qwenrt_status_string((qwenrt_status)99), "UNKNOWN") == 0);
  EXPECT(QWENRT_BUFFER_TOO_SMALL == 7 && QWENRT_CANCELLED == 9);

  EXPECT(mp.struct_size == sizeof(qwenrt_model_params) && !mp.check_tensors &&
         !mp.progress_callback);
  EXPECT(sp.struct_size == sizeof(qwenrt_session_params) && sp.n_ctx == 0 &&
         sp.backend == QWENRT_BACKEND_AUTO && sp.history_mode == QWENRT_HISTORY_TEMPLATE);
  EXPECT(smp.struct_size == sizeof(qwenrt_sampling_params) && smp.temperature == 0.0f &&
         smp.top_p == 1.0f);
  EXPECT(gp.struct_size == sizeof(qwenrt_generate_params) && gp.max_tokens > 0 &&
         gp.callback == NULL);
  EXPECT(chat.struct_size == sizeof(qwenrt_chat) && chat.enable_thinking &&
         chat.add_generation_prompt && chat.n_messages == 0);

  EXPECT(qwenrt_last_error() != NULL);
  EXPECT(qwenrt_model_load(NULL, &mp, &model) == QWENRT_INVALID_ARGUMENT);
  EXPECT(model == NULL);
  EXPECT(strstr(qwenrt_last_error(), "qwenrt_model_load") != NULL);
  EXPECT(strstr(qwenrt_last_error(), "INVALID_ARGUMENT") != NULL);

  qwenrt_model_free(NULL);
  qwenrt_session_free(NULL);

  if (failures == 0) printf("capi_header_test: all checks passed\n");
  return failures == 0 ? 0 : 1;
}

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

int main(void) {
  char expect_version[32];
  qwenrt_model_params mp = qwenrt_model_default_params();
  qwenrt_session_params sp = qwenrt_session_default_params();
  qwenrt_sampling_params smp = qwenrt_sampling_default_params();
  qwenrt_generate_params gp = qwenrt_generate_default_params();
  qwenrt_chat chat = qwenrt_chat_default();
  qwenrt_model* model = NULL;

  sprintf(expect_version, "%d.%d.%d", QWENRT_VERSION_MAJOR, QWENRT_VERSION_MINOR,
          QWENRT_VERSION_PATCH);
  EXPECT(strcmp(qwenrt_version(), expect_version) == 0);
  EXPECT(qwenrt_abi_version() == QWENRT_ABI_VERSION);

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

/* A program built against the *installed* qwenrt (find_package or pkg-config): one chat turn. */
#include <qwenrt/qwenrt.h>
#include <stdio.h>

int main(int argc, char** argv) {
  qwenrt_model* model = NULL;
  qwenrt_session* session = NULL;
  qwenrt_message msg = {
      .struct_size = sizeof(qwenrt_message), .role = QWENRT_ROLE_USER, .content = "Hi!"};
  qwenrt_chat chat;
  qwenrt_generate_params gp;
  qwenrt_report report = {.struct_size = sizeof(qwenrt_report)};
  if (argc < 2) return 2;
  if (qwenrt_abi_version() < QWENRT_ABI_VERSION) return 3;
  if (QWENRT_INIT(qwenrt_chat_init, &chat) != QWENRT_OK ||
      QWENRT_INIT(qwenrt_generate_params_init, &gp) != QWENRT_OK)
    return 4;
  chat.messages = &msg;
  chat.n_messages = 1;
  gp.max_tokens = 4;
  if (qwenrt_model_load(argv[1], NULL, &model) != QWENRT_OK ||
      qwenrt_session_create(model, NULL, &session) != QWENRT_OK ||
      qwenrt_session_chat(session, &chat, NULL, &gp, &report) != QWENRT_OK) {
    fprintf(stderr, "consumer: %s\n", qwenrt_last_error());
    return 1;
  }
  printf("consumer OK: qwenrt %s, prompt %lld tokens, generated %lld\n", qwenrt_version(),
         (long long)report.prompt_tokens, (long long)report.generated_tokens);
  qwenrt_session_free(session);
  qwenrt_model_free(model);
  return report.generated_tokens > 0 ? 0 : 1;
}

/* What the C API tests written against either header share (capi_params_test: qwenrt/qwenrt.h;
 * capi_abi_v1_test: the ABI 1 copy in tests/abi/): the fixture path, a failure count, EXPECT
 * (counts and goes on) and ASSERT_OK (stops the test). Include it after the qwenrt header: it uses
 * only what both headers have (qwenrt_status_string, qwenrt_last_error). */
#ifndef QWENRT_TESTS_CAPI_TEST_UTIL_H
#define QWENRT_TESTS_CAPI_TEST_UTIL_H

#include <stdio.h>
#include <stdlib.h>

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

#define ASSERT_OK(call)                                                                \
  do {                                                                                 \
    qwenrt_status s_ = (call);                                                         \
    if (s_ != QWENRT_OK) {                                                             \
      fprintf(stderr, "%s:%d: FATAL: %s returned %s: %s\n", __FILE__, __LINE__, #call, \
              qwenrt_status_string(s_), qwenrt_last_error());                          \
      exit(1);                                                                         \
    }                                                                                  \
  } while (0)

#endif /* QWENRT_TESTS_CAPI_TEST_UTIL_H */

# qwenrt-cli estimate: the memory terms of the micro fixture at a context, working buffers included
# (through the C ABI; the numbers themselves are checked against sessions in memory_estimate_test),
# and bad arguments that must exit non-zero with a message (WILL_FAIL). Included by
# tests/CMakeLists.txt.
if(QWENRT_BUILD_EXAMPLES)
  set(_m ${CMAKE_CURRENT_SOURCE_DIR}/data/micro-s1-f32.gguf)
  add_test(NAME cli_estimate_ok COMMAND qwenrt-cli estimate --model ${_m} --ctx 300 --kv-type q8_0
           --sessions 2 --threads 2)
  # Every term printed, the working buffers not zero (ubatch 512 rows of activations).
  set_tests_properties(cli_estimate_ok PROPERTIES PASS_REGULAR_EXPRESSION
    "context +300 positions, q8_0 KV, 2 session\\(s\\), 2 threads\nweights +[0-9.]+ MiB\nper session +[0-9.]+ MiB\n  KV +[0-9.]+ MiB\n  state +[0-9.]+ MiB\n  checkpoints +[0-9.]+ MiB\n  working +[1-9][0-9]*\\.[0-9][0-9] MiB\ntotal +[0-9.]+ MiB")
  # --allocate: the sessions created and their whole context reserved, pages written.
  add_test(NAME cli_estimate_allocate COMMAND qwenrt-cli estimate --model ${_m} --ctx 4096
           --sessions 2 --threads 2 --allocate)
  set_tests_properties(cli_estimate_allocate PROPERTIES PASS_REGULAR_EXPRESSION
    "allocated +2 session\\(s\\) reserved for 4096 positions, KV pages written\nresident .*\nestimate .* measured/estimate [0-9.]+")
  add_test(NAME cli_estimate_no_model COMMAND qwenrt-cli estimate --ctx 300)
  add_test(NAME cli_estimate_bad_kv_type COMMAND qwenrt-cli estimate --model ${_m} --kv-type f8)
  add_test(NAME cli_estimate_bad_sessions COMMAND qwenrt-cli estimate --model ${_m} --sessions 0)
  add_test(NAME cli_estimate_missing_file COMMAND qwenrt-cli estimate --model ${_m}.missing)
  set_tests_properties(cli_estimate_no_model cli_estimate_bad_kv_type cli_estimate_bad_sessions
                       cli_estimate_missing_file PROPERTIES WILL_FAIL TRUE)
endif()

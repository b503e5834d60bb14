# qwenrt-cli eval: one good run on the micro fixture, and bad arguments / files that must exit
# non-zero with a message (WILL_FAIL). Included by tests/CMakeLists.txt.
if(QWENRT_BUILD_EXAMPLES)
  set(_d ${CMAKE_CURRENT_SOURCE_DIR}/data)
  set(_o ${CMAKE_CURRENT_BINARY_DIR}/cli_eval_out.f32)
  add_test(NAME cli_eval_ok COMMAND qwenrt-cli eval --model ${_d}/micro-s1-f32.gguf
           --tokens ${_d}/tokens/seqB.txt --out ${_o} --backend cpu --threads 2 --ubatch 7)
  add_test(NAME cli_eval_no_model COMMAND qwenrt-cli eval --tokens ${_d}/tokens/seqB.txt --out ${_o})
  add_test(NAME cli_eval_bad_backend COMMAND qwenrt-cli eval --model ${_d}/micro-s1-f32.gguf
           --tokens ${_d}/tokens/seqB.txt --out ${_o} --backend gpu)
  add_test(NAME cli_eval_missing_file COMMAND qwenrt-cli eval --model ${_d}/no-such.gguf
           --tokens ${_d}/tokens/seqB.txt --out ${_o})
  add_test(NAME cli_eval_not_a_model COMMAND qwenrt-cli eval --model ${_d}/tokens/seqB.txt
           --tokens ${_d}/tokens/seqB.txt --out ${_o})
  add_test(NAME cli_eval_bad_tokens COMMAND qwenrt-cli eval --model ${_d}/micro-s1-f32.gguf
           --tokens ${_d}/micro-s1-f32.json --out ${_o})
  add_test(NAME cli_eval_bad_ubatch COMMAND qwenrt-cli eval --model ${_d}/micro-s1-f32.gguf
           --tokens ${_d}/tokens/seqB.txt --out ${_o} --ubatch 0)
  set_tests_properties(cli_eval_no_model cli_eval_bad_backend cli_eval_missing_file cli_eval_not_a_model
                       cli_eval_bad_tokens cli_eval_bad_ubatch PROPERTIES WILL_FAIL TRUE)
endif()

# `qwenrt-cli render` reproduces tests/data/chat/render-golden.json byte for byte (up to the final
# newline), once with the template file and once reading `tokenizer.chat_template` from a fixture
# GGUF. Included by tests/CMakeLists.txt to register the tests; run with -P to do one check.
if(CMAKE_SCRIPT_MODE_FILE)
  execute_process(COMMAND ${CLI} render ${SOURCE_ARGS} --cases ${GOLDEN} --out ${OUT}
                  RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "qwenrt-cli render failed (${rc}): ${err}")
  endif()
  file(READ ${OUT} got)
  file(READ ${GOLDEN} want)
  string(STRIP "${got}" got)
  string(STRIP "${want}" want)
  if(NOT got STREQUAL want)
    message(FATAL_ERROR "qwenrt-cli render output ${OUT} differs from ${GOLDEN}")
  endif()
  return()
endif()

if(QWENRT_BUILD_EXAMPLES)
  set(_chat ${CMAKE_CURRENT_SOURCE_DIR}/data/chat)
  add_test(NAME cli_render_template COMMAND ${CMAKE_COMMAND} -DCLI=$<TARGET_FILE:qwenrt-cli>
           "-DSOURCE_ARGS=--template;${_chat}/qwen3.5-chat-template.jinja" -DGOLDEN=${_chat}/render-golden.json
           -DOUT=${CMAKE_CURRENT_BINARY_DIR}/render-template.json -P ${CMAKE_CURRENT_LIST_FILE})
  add_test(NAME cli_render_model COMMAND ${CMAKE_COMMAND} -DCLI=$<TARGET_FILE:qwenrt-cli>
           "-DSOURCE_ARGS=--model;${CMAKE_CURRENT_SOURCE_DIR}/data/tiny-s1-q4km.gguf" -DGOLDEN=${_chat}/render-golden.json
           -DOUT=${CMAKE_CURRENT_BINARY_DIR}/render-model.json -P ${CMAKE_CURRENT_LIST_FILE})
endif()

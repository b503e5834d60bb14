# chat_repl_script: chat_repl scripted through a pipe. Three turns whose report lines show turns 2 and
# 3 reusing the previous ones, then /save; a new process /loads and continues the conversation with
# the same reuse (no re-prefill) and the same reply as the uninterrupted run. Also checks what a pipe
# shows of each reply (notes for hidden reasoning and whitespace-only replies, labelled reasoning).
if(QWENRT_BUILD_EXAMPLES)
  add_test(NAME chat_repl_script COMMAND ${CMAKE_COMMAND} -DREPL=$<TARGET_FILE:chat_repl>
    -DWORK=${CMAKE_CURRENT_BINARY_DIR}/chat_repl_test -DMOE_MODEL=${CMAKE_CURRENT_SOURCE_DIR}/data/tinymoe-s1-q4km.gguf
    -P ${CMAKE_CURRENT_SOURCE_DIR}/capi/check_chat_repl.cmake)
  set_tests_properties(chat_repl_script PROPERTIES TIMEOUT 600)
endif()

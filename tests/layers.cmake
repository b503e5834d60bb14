# layers: every #include in src/, capi/ and the C-API-only examples follows the layering of
# docs/layers.md (base <- text <- ops <- model <- session <- chat <- capi; src/testing apart).
find_package(Python3 COMPONENTS Interpreter QUIET)
if(Python3_Interpreter_FOUND)
  add_test(NAME layers COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/check_layers.py
           ${PROJECT_SOURCE_DIR})
  set_tests_properties(layers PROPERTIES PASS_REGULAR_EXPRESSION "check_layers: OK"
                       ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1")
endif()

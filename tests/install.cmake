# capi_install: installs qwenrt into a temporary prefix and, from a copy of tests/capi/consumer outside
# the source tree, builds and runs a chat program with find_package(qwenrt) (shared and static) and
# with pkg-config. Not when cross-compiling: the consumer it builds could not run here.
find_program(QWENRT_PKG_CONFIG_EXE pkg-config)
if(QWENRT_PKG_CONFIG_EXE AND NOT CMAKE_CROSSCOMPILING)
  add_test(NAME capi_install COMMAND ${CMAKE_COMMAND}
    -DBUILD_DIR=${PROJECT_BINARY_DIR} -DWORK=${CMAKE_CURRENT_BINARY_DIR}/install_test
    -DCONSUMER=${CMAKE_CURRENT_SOURCE_DIR}/capi/consumer -DPKG_CONFIG=${QWENRT_PKG_CONFIG_EXE}
    -DCC=${CMAKE_C_COMPILER} -DCXX=${CMAKE_CXX_COMPILER} -DGENERATOR=${CMAKE_GENERATOR}
    -DMODEL=${CMAKE_CURRENT_SOURCE_DIR}/data/tiny-s1-q4km.gguf
    -P ${CMAKE_CURRENT_SOURCE_DIR}/capi/check_install.cmake)
  set_tests_properties(capi_install PROPERTIES TIMEOUT 600 RUN_SERIAL TRUE)
endif()

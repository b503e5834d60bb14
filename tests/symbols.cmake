# capi_symbols: libqwenrt.so exports only qwenrt_* symbols, exports every QWENRT_API function of
# qwenrt.h and of the ABI 1 header (tests/abi/qwenrt_v1.h: nothing an older host links is gone),
# carries the SONAME libqwenrt.so.<QWENRT_SOVERSION>, and the header's QWENRT_ABI_VERSION /
# QWENRT_SOVERSION equal CMakeLists.txt's. Needs nm and readelf (binutils).
find_program(QWENRT_NM_EXE nm)
find_program(QWENRT_READELF_EXE readelf)
if(QWENRT_NM_EXE AND QWENRT_READELF_EXE)
  add_test(NAME capi_symbols COMMAND ${CMAKE_COMMAND}
    -DLIB=$<TARGET_FILE:qwenrt> -DNM=${QWENRT_NM_EXE} -DREADELF=${QWENRT_READELF_EXE}
    -DHEADER=${PROJECT_SOURCE_DIR}/include/qwenrt/qwenrt.h
    -DOLD_HEADER=${CMAKE_CURRENT_SOURCE_DIR}/abi/qwenrt_v1.h
    -DABI=${QWENRT_ABI_VERSION} -DSOVERSION=${QWENRT_SOVERSION}
    -P ${CMAKE_CURRENT_SOURCE_DIR}/capi/check_symbols.cmake)
endif()

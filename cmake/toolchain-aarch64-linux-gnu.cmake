# Cross-compiling for 64-bit ARM Linux with Debian's toolchain (g++-aarch64-linux-gnu) against the
# arm64 multiarch packages (libfmt-dev:arm64, libutf8proc-dev:arm64; see scripts/install-deps.sh).
# Binaries run on this machine under qemu-user (CMAKE_CROSSCOMPILING_EMULATOR), so ctest runs them
# transparently. Driver: scripts/test-aarch64.sh.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

# Multiarch: find_package / find_library look in /usr/lib/aarch64-linux-gnu first, where the arm64
# packages put their libraries and CMake configs (the host's are in /usr/lib/x86_64-linux-gnu);
# header-only and arch-independent packages (Catch2 2, nlohmann-json) are shared. pkg-config reads
# only the arm64 .pc files.
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)

find_program(QWENRT_QEMU_AARCH64 qemu-aarch64 REQUIRED)
set(CMAKE_CROSSCOMPILING_EMULATOR ${QWENRT_QEMU_AARCH64} -L /usr/aarch64-linux-gnu)

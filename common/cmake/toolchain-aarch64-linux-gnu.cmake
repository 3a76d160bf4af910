# Cross-compiles the farm for aarch64 Linux (GB10 / DGX Spark, Grace, any arm64 server) on
# an x86_64 Debian 12 machine, with Debian's cross compilers and the arm64 multiarch
# libraries installed next to the native ones (common/scripts/cross-build-aarch64.sh
# installs them and explains the one package that cannot be co-installed).
#
#   cmake -S . -B build-aarch64 \
#     -DCMAKE_TOOLCHAIN_FILE=common/cmake/toolchain-aarch64-linux-gnu.cmake -DFARM_BUILD_TESTS=OFF
#
# Programs that run during the build (protoc, grpc_cpp_plugin, the compiler launcher) are
# the build machine's own; libraries, headers and CMake packages are the arm64 ones under
# /usr/lib/aarch64-linux-gnu. CMAKE_CROSSCOMPILING_EMULATOR lets CMake run an aarch64 program
# through qemu-user when one is needed (try_run, tests); nothing in the default build does.
# With libc6:arm64 installed, the multiarch loader and libraries make that work without a
# separate root.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

# Debian multiarch keeps the target's files in the build machine's own tree, so the root
# is "/" and the architecture directories tell the two apart. Programs come from the host.
set(CMAKE_FIND_ROOT_PATH /)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# Never pick up an x86_64 library: search only the aarch64 directories (and arch-neutral ones).
set(CMAKE_IGNORE_PATH /usr/lib/x86_64-linux-gnu /lib/x86_64-linux-gnu)

# pkg-config (zstd, lz4): Debian's cross wrapper reads only the arm64 .pc files.
find_program(PKG_CONFIG_EXECUTABLE aarch64-linux-gnu-pkg-config)

find_program(FARM_QEMU_AARCH64 qemu-aarch64-static qemu-aarch64)
if(FARM_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${FARM_QEMU_AARCH64})
endif()

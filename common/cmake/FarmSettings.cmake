# Interface targets carrying the farm's language settings and warnings. They are linked
# PRIVATE into the farm's own targets and never into generated protobuf code.
if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
  set(CMAKE_BUILD_TYPE RelWithDebInfo CACHE STRING "Build type" FORCE)
endif()

# FARM_FAST_BUILD (the quick start and the test command turn it on): a first build from
# nothing in about half the time. Unity builds (CMake compiles each target's sources in
# batches of eight, so the standard library, gRPC, Boost and the farm's messages, most of
# every file's parse, are parsed once per batch) and line tables only (-g1: backtraces keep
# file, line and function; gdb shows no locals). Precompiled headers no longer pay for
# themselves on top of unity batches: making one per library cost more than the one parse
# per batch it saved (212 s against 245 s for the quick start's build). Because of the
# batches, names in an anonymous namespace must be unique within their library, which a
# FARM_FAST_BUILD checks. Off by default, so developers keep full debug information, one
# object per file and every file naming what it includes. Measured in docs/benchmarks.md
# ("The first build").
option(FARM_FAST_BUILD "Unity builds and -g1, for a first build from nothing" OFF)
if(FARM_FAST_BUILD)
  set(CMAKE_CXX_FLAGS_RELWITHDEBINFO "-O2 -g1 -DNDEBUG")
  set(CMAKE_UNITY_BUILD ON)
endif()

find_program(FARM_CCACHE ccache)
if(FARM_CCACHE)
  set(CMAKE_CXX_COMPILER_LAUNCHER ${FARM_CCACHE})
endif()

# Sanitizers apply to every target of the build; any report stops the process
# (-fno-sanitize-recover): a UB report fails a test like a crash does.
if(FARM_SANITIZE)
  if(NOT FARM_SANITIZE MATCHES "^(address,undefined|undefined,address|address|undefined|thread)$")
    message(FATAL_ERROR "FARM_SANITIZE must be address,undefined or thread (got '${FARM_SANITIZE}')")
  endif()
  # -O1 -g1: what the sanitizers' documentation recommends for usable stack traces, and a
  # build about as fast as the plain -O2 -g one, which keeps the test suite's time.
  add_compile_options(-fsanitize=${FARM_SANITIZE} -fno-sanitize-recover=all
                      -fno-omit-frame-pointer -O1 -g1)
  add_link_options(-fsanitize=${FARM_SANITIZE})
  # UBSan's null and alignment checks instrument every pointer use: they took about 30% of
  # the whole sanitized build's compile time (a unit of the store: 15.4 s of CPU with them,
  # 11.0 s without), and catch nothing the suite needs on x86-64. A null dereference still
  # stops the process, with AddressSanitizer's SEGV report and its stack; a misaligned load
  # does not fault there. The vptr check (bad downcasts) and the other UB checks stay.
  if(FARM_SANITIZE MATCHES "undefined")
    add_compile_options(-fno-sanitize=alignment,null)
  endif()
endif()

# farm_unsanitized(TARGET): compiles TARGET's own sources without AddressSanitizer and
# UBSan, for generated code only. Mixing is sound under those two: they check the
# instrumented side of a call (libprotobuf itself comes from Debian uninstrumented, and the
# messages' inline accessors are compiled, instrumented, into the farm's own files).
# ThreadSanitizer needs every memory access instrumented, so its build keeps them.
function(farm_unsanitized target)
  if(FARM_SANITIZE AND NOT FARM_SANITIZE STREQUAL "thread")
    target_compile_options(${target} PRIVATE -fno-sanitize=all)
  endif()
endfunction()

# libFuzzer builds (tests/fuzz): every object gets the fuzzer's coverage hooks and
# AddressSanitizer with UndefinedBehaviorSanitizer; only the fuzz targets link libFuzzer.
if(FARM_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "FARM_FUZZ needs clang: configure with CC=clang CXX=clang++")
  endif()
  if(FARM_SANITIZE)
    message(FATAL_ERROR "FARM_FUZZ brings its own sanitizers: leave FARM_SANITIZE empty")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all
                      -fno-omit-frame-pointer -O1 -g)
  add_link_options(-fsanitize=address,undefined)
endif()

add_library(farm_settings INTERFACE)
target_compile_features(farm_settings INTERFACE cxx_std_20)
target_include_directories(farm_settings INTERFACE ${PROJECT_SOURCE_DIR})

add_library(farm_warnings INTERFACE)
target_compile_options(farm_warnings INTERFACE -Wall -Wextra -Wshadow -Wno-unused-parameter
  -Wno-missing-field-initializers)  # designated initializers leave the rest defaulted
if(FARM_DEV_MODE)
  target_compile_options(farm_warnings INTERFACE -Werror)
endif()

# farm_add_library(NAME SOURCES... [DEPS ...]) declares one component library.
function(farm_add_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_link_libraries(${name} PUBLIC farm_settings ${ARG_DEPS} PRIVATE farm_warnings)
endfunction()

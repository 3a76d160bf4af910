# Interface targets carrying the farm's language settings and warnings. They are linked
# PRIVATE into the farm's own targets and never into generated protobuf code.
if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
  set(CMAKE_BUILD_TYPE RelWithDebInfo CACHE STRING "Build type" FORCE)
endif()

# FARM_FAST_BUILD (the quick start and the test command turn it on): a first build from
# nothing in less than half the time. Unity builds (CMake compiles each target's sources in
# batches of eight, so a header shared by the batch is parsed once), precompiled headers
# per component library (the standard library, gRPC and the farm's protobuf headers are
# most of every file's parse) and line tables only (-g1: backtraces keep file, line and
# function; gdb shows no locals). Because of the unity batches, names in an anonymous
# namespace must be unique within their component, which a FARM_FAST_BUILD checks. Off by
# default, so developers keep full debug information, one object per file and every file
# naming what it includes. Measured in docs/benchmarks.md ("The first build").
option(FARM_FAST_BUILD "Unity builds, precompiled headers and -g1, for a first build from nothing" OFF)
if(FARM_FAST_BUILD)
  set(CMAKE_CXX_FLAGS_RELWITHDEBINFO "-O2 -g1 -DNDEBUG")
  set(CMAKE_UNITY_BUILD ON)
endif()

find_program(FARM_CCACHE ccache)
if(FARM_CCACHE AND FARM_FAST_BUILD)
  # ccache caches files compiled with a precompiled header only with this sloppiness
  # (its manual, "Precompiled headers"); CMake includes the header with -include.
  set(CMAKE_CXX_COMPILER_LAUNCHER env CCACHE_SLOPPINESS=pch_defines,time_macros ${FARM_CCACHE})
elseif(FARM_CCACHE)
  set(CMAKE_CXX_COMPILER_LAUNCHER ${FARM_CCACHE})
endif()

# Sanitizers apply to every target of the build, generated protobuf code included, so that
# an object crossing from one to the other is instrumented on both sides. Any report stops
# the process (-fno-sanitize-recover): a UB report fails a test like a crash does.
if(FARM_SANITIZE)
  if(NOT FARM_SANITIZE MATCHES "^(address,undefined|undefined,address|address|undefined|thread)$")
    message(FATAL_ERROR "FARM_SANITIZE must be address,undefined or thread (got '${FARM_SANITIZE}')")
  endif()
  # -O1 -g1: what the sanitizers' documentation recommends for usable stack traces, and a
  # build about as fast as the plain -O2 -g one, which keeps the test suite's time.
  add_compile_options(-fsanitize=${FARM_SANITIZE} -fno-sanitize-recover=all
                      -fno-omit-frame-pointer -O1 -g1)
  add_link_options(-fsanitize=${FARM_SANITIZE})
endif()

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
  farm_precompile_headers(${name} "${ARG_SOURCES}" "${ARG_DEPS}")
endfunction()

# With FARM_FAST_BUILD, gives a library of more than three sources a precompiled header:
# the standard library, Status and logging, and gRPC with the farm's messages for a
# library that links farm_proto itself (so they are generated before the header is built).
function(farm_precompile_headers name sources deps)
  list(LENGTH sources count)
  if(NOT FARM_FAST_BUILD OR count LESS 4)
    return()
  endif()
  set(headers <algorithm> <chrono> <cstdint> <functional> <map> <memory> <mutex> <optional>
      <set> <string> <thread> <vector> "${PROJECT_SOURCE_DIR}/common/status.h"
      "${PROJECT_SOURCE_DIR}/common/log.h")
  if("farm_proto" IN_LIST deps)
    foreach(proto types client worker)
      list(APPEND headers "${PROJECT_BINARY_DIR}/proto/farm/v1/${proto}.pb.h")
    endforeach()
    list(APPEND headers <grpcpp/grpcpp.h>)
  endif()
  target_precompile_headers(${name} PRIVATE ${headers})
endfunction()

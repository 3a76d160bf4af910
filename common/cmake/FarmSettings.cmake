# Interface targets carrying the farm's language settings and warnings. They are linked
# PRIVATE into the farm's own targets and never into generated protobuf code.
if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
  set(CMAKE_BUILD_TYPE RelWithDebInfo CACHE STRING "Build type" FORCE)
endif()

find_program(FARM_CCACHE ccache)
if(FARM_CCACHE)
  set(CMAKE_CXX_COMPILER_LAUNCHER ${FARM_CCACHE})
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

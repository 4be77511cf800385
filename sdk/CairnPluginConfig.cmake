# find_package(CairnPlugin) gives:
#   Cairn::plugin                      INTERFACE target: the SDK headers and
#                                      hidden symbol visibility
#   cairn_add_plugin(<name> <src>...)  a MODULE library <name>.so (no "lib"
#                                      prefix) linked to Cairn::plugin
#   CairnPlugin_INCLUDE_DIR            the directory holding cairn/plugin.h

# This file lives in <libdir>/cmake/CairnPlugin; the headers in
# <prefix>/include. Walk up to the prefix, whatever libdir is.
set(_cairn_dir "${CMAKE_CURRENT_LIST_DIR}")
set(CairnPlugin_INCLUDE_DIR "")
foreach(_cairn_level RANGE 1 5)
  get_filename_component(_cairn_dir "${_cairn_dir}" DIRECTORY)
  if(EXISTS "${_cairn_dir}/include/cairn/plugin.h")
    set(CairnPlugin_INCLUDE_DIR "${_cairn_dir}/include")
    break()
  endif()
endforeach()
unset(_cairn_dir)
unset(_cairn_level)

if(NOT CairnPlugin_INCLUDE_DIR)
  set(CairnPlugin_FOUND FALSE)
  set(CairnPlugin_NOT_FOUND_MESSAGE "cairn/plugin.h not found above ${CMAKE_CURRENT_LIST_DIR}")
  return()
endif()

if(NOT TARGET Cairn::plugin)
  add_library(Cairn::plugin INTERFACE IMPORTED)
  set_target_properties(Cairn::plugin PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${CairnPlugin_INCLUDE_DIR}"
    INTERFACE_COMPILE_OPTIONS "-fvisibility=hidden")
endif()

function(cairn_add_plugin name)
  if(ARGC LESS 2)
    message(FATAL_ERROR "cairn_add_plugin(${name}): give at least one source file")
  endif()
  add_library(${name} MODULE ${ARGN})
  target_link_libraries(${name} PRIVATE Cairn::plugin)
  set_target_properties(${name} PROPERTIES PREFIX "" C_VISIBILITY_PRESET hidden CXX_VISIBILITY_PRESET hidden)
endfunction()

set(CairnPlugin_FOUND TRUE)

# KeyschemaAdapter.cmake: keyschema_add_adapter(<name> [LINKS <target>...])
#
# Called from adapters/<name>/CMakeLists.txt. Defines the header-only INTERFACE target
# keyschema_<name> (alias and exported name keyschema::<name>) over the calling directory's
# include/, linking keyschema::keyschema and the LINKS targets (the engine's, located by
# cmake/Keyschema<Engine>.cmake). With KEYSCHEMA_INSTALL it installs those headers and the export
# set keyschema-<name>-targets, which keyschema-config.cmake loads for
# find_package(keyschema COMPONENTS <name>).

include_guard(GLOBAL)

function(keyschema_add_adapter name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "LINKS")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "keyschema_add_adapter(${name}): unknown arguments '${arg_UNPARSED_ARGUMENTS}' "
                        "(it takes the adapter's name and LINKS <target>...)")
  endif()
  set(target keyschema_${name})
  add_library(${target} INTERFACE)
  add_library(keyschema::${name} ALIAS ${target})
  target_include_directories(${target} INTERFACE
    $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_link_libraries(${target} INTERFACE keyschema::keyschema ${arg_LINKS})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${name})

  if(KEYSCHEMA_INSTALL)
    install(DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}/include/" DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
            COMPONENT keyschema_development FILES_MATCHING PATTERN "*.hpp")
    install(TARGETS ${target} EXPORT keyschema-${name}-targets)
    install(EXPORT keyschema-${name}-targets
            NAMESPACE keyschema::
            DESTINATION ${KEYSCHEMA_INSTALL_CMAKEDIR}
            COMPONENT keyschema_development)
  endif()
endfunction()

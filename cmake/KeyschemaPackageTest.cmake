# KeyschemaPackageTest.cmake: build and run the downstream project tests/package (cmake -P).
#
#   cmake -DMODE=install|subdirectory -DSOURCE_DIR=<keyschema source> -DBUILD_DIR=<keyschema build>
#         -DWORK_DIR=<scratch> -DGENERATOR=<generator> -DCXX_COMPILER=<path>
#         [-DCONFIG=<config>] [-DCOMPONENTS=leveldb,lmdb,sqlite] -P KeyschemaPackageTest.cmake
#
# COMPONENTS is comma-separated (a ; would split the command line).
#
# MODE=install       installs BUILD_DIR into WORK_DIR/prefix (cmake --install), checks that the
#                    installed package files do not point back into the source or build tree, then
#                    configures tests/package with CMAKE_PREFIX_PATH=<prefix> (find_package).
# MODE=subdirectory  configures tests/package with add_subdirectory(SOURCE_DIR).
# Both then build the consumer and run it. Any failing step fails the test with its output.

foreach(var MODE SOURCE_DIR BUILD_DIR WORK_DIR GENERATOR CXX_COMPILER)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "KeyschemaPackageTest.cmake: -D${var}=... is required")
  endif()
endforeach()
if(NOT CONFIG)
  set(CONFIG Release)
endif()

function(run_step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "package test (${MODE}): ${what} failed (${rc})\n${out}")
  endif()
  message(STATUS "${what}: ok")
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
set(consumer_build "${WORK_DIR}/consumer")
set(configure_args
  -S "${SOURCE_DIR}/tests/package" -B "${consumer_build}" -G "${GENERATOR}"
  "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}"
  "-DCMAKE_BUILD_TYPE=${CONFIG}"
  "-DKEYSCHEMA_CONSUMER_COMPONENTS=${COMPONENTS}")

if(MODE STREQUAL "install")
  set(prefix "${WORK_DIR}/prefix")
  run_step("cmake --install" "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${prefix}" --config "${CONFIG}")

  file(GLOB_RECURSE package_files "${prefix}/*.cmake")
  if(NOT package_files)
    message(FATAL_ERROR "package test: no CMake package files were installed under ${prefix}")
  endif()
  foreach(f IN LISTS package_files)
    file(READ "${f}" text)
    foreach(tree "${SOURCE_DIR}" "${BUILD_DIR}")
      string(FIND "${text}" "${tree}" at)
      if(NOT at EQUAL -1)
        message(FATAL_ERROR "package test: installed ${f} refers to ${tree}")
      endif()
    endforeach()
  endforeach()
  if(NOT EXISTS "${prefix}/include/keyschema/error.hpp")
    message(FATAL_ERROR "package test: headers were not installed under ${prefix}/include")
  endif()

  # The license travels with the package: the LICENSE file, and its name in the CMake package.
  file(GLOB_RECURSE license_files "${prefix}/*/LICENSE")
  if(NOT license_files)
    message(FATAL_ERROR "package test: no LICENSE file was installed under ${prefix}")
  endif()
  file(READ "${prefix}/share/cmake/keyschema/keyschema-config.cmake" config_text)
  if(NOT config_text MATCHES "keyschema_LICENSE \"Apache-2.0\"")
    message(FATAL_ERROR "package test: keyschema-config.cmake does not name the license (keyschema_LICENSE)")
  endif()

  # pkg-config: keyschema.pc names the installed include directory, wherever the prefix is.
  find_program(pkg_config NAMES pkg-config)
  if(pkg_config)
    set(ENV{PKG_CONFIG_PATH} "${prefix}/share/pkgconfig")
    run_step("pkg-config --cflags keyschema" "${pkg_config}" --cflags keyschema)
    file(REAL_PATH "${prefix}/include" real_include)
    string(STRIP "${step_output}" cflags)
    string(FIND "${cflags}" "-I" at)
    if(at EQUAL -1)
      message(FATAL_ERROR "package test: pkg-config --cflags keyschema gave '${cflags}', no -I")
    endif()
    string(REGEX MATCH "-I[^ ]+" include_flag "${cflags}")
    string(SUBSTRING "${include_flag}" 2 -1 include_dir)
    file(REAL_PATH "${include_dir}" real_pc_include)
    if(NOT real_pc_include STREQUAL real_include)
      message(FATAL_ERROR "package test: keyschema.pc's include directory ${include_dir} is not ${prefix}/include")
    endif()
    run_step("pkg-config --modversion keyschema" "${pkg_config}" --modversion keyschema)
  else()
    message(FATAL_ERROR "package test: pkg-config not found (Debian: pkg-config; scripts/install-deps.sh installs it)")
  endif()

  # The installed keyschema-bench finds the installed cluster script, not the source tree's.
  if(EXISTS "${prefix}/bin/keyschema-bench")
    if(NOT EXISTS "${prefix}/share/keyschema/etcd-cluster.sh")
      message(FATAL_ERROR "package test: keyschema-bench is installed without share/keyschema/etcd-cluster.sh")
    endif()
    file(STRINGS "${prefix}/bin/keyschema-bench" bench_strings REGEX "etcd-cluster")
    foreach(tree "${SOURCE_DIR}" "${BUILD_DIR}")
      foreach(str IN LISTS bench_strings)
        string(FIND "${str}" "${tree}" at)
        if(NOT at EQUAL -1)
          message(FATAL_ERROR "package test: the installed keyschema-bench has a path into ${tree} compiled in: ${str}")
        endif()
      endforeach()
    endforeach()
  endif()

  run_step("configure consumer (find_package)" "${CMAKE_COMMAND}" ${configure_args}
           "-DCMAKE_PREFIX_PATH=${prefix}")
elseif(MODE STREQUAL "subdirectory")
  run_step("configure consumer (add_subdirectory)" "${CMAKE_COMMAND}" ${configure_args}
           "-DKEYSCHEMA_CONSUMER_SOURCE_DIR=${SOURCE_DIR}")
else()
  message(FATAL_ERROR "KeyschemaPackageTest.cmake: MODE must be install or subdirectory, not '${MODE}'")
endif()

run_step("build consumer" "${CMAKE_COMMAND}" --build "${consumer_build}" --config "${CONFIG}")

find_program(consumer_exe NAMES consumer PATHS "${consumer_build}" "${consumer_build}/${CONFIG}" NO_DEFAULT_PATH)
if(NOT consumer_exe)
  message(FATAL_ERROR "package test: the consumer executable was not built in ${consumer_build}")
endif()
run_step("run consumer" "${consumer_exe}")
message(STATUS "${step_output}")
if(NOT step_output MATCHES "consumer: ok")
  message(FATAL_ERROR "package test: the consumer did not report success")
endif()
message(STATUS "keyschema-package-test: ${MODE} ok")

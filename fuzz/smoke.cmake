# A short run of every fuzz target inside the ordinary test suite, where clang with libFuzzer is
# installed (.ci/setup installs it): the fuzz targets are built by clang in a sub-build of this
# source tree (build/fuzz-smoke, configured like the fuzz preset) during the normal build, and
# each runs for ANNEALER_FUZZ_SMOKE_SECONDS over its seed corpus as a ctest test. Without clang
# nothing is added (a note says so). AUTO, the default, looks again at every configure, so a build
# directory first configured after `.ci/setup build` (no clang) gets the smoke tests once
# `.ci/setup` has installed clang (README's main command, then its test command).
find_program(ANNEALER_CLANGXX NAMES clang++ clang++-14 clang++-15 clang++-16)
set(ANNEALER_FUZZ_SMOKE_SECONDS 10 CACHE STRING "Seconds per fuzz target in the test suite's smoke run")
# A fixed seed: the suite walks the same inputs on every run (as far as its seconds reach), so a
# pass or a failure repeats. 0 lets libFuzzer draw one (longer explorations: fuzz/README or the
# fuzz preset).
set(ANNEALER_FUZZ_SMOKE_SEED 1 CACHE STRING "libFuzzer -seed of the smoke run (0: a random seed)")
set(fuzz_ok FALSE)
if(ANNEALER_CLANGXX)
  # Does this clang come with libFuzzer? (Debian's clang does; a bare one may not.)
  set(probe_dir ${CMAKE_BINARY_DIR}/fuzz-probe)
  file(WRITE ${probe_dir}/probe.cc
       "#include <cstddef>\n#include <cstdint>\n"
       "extern \"C\" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }\n")
  execute_process(COMMAND ${ANNEALER_CLANGXX} -fsanitize=fuzzer,address,undefined ${probe_dir}/probe.cc
                          -o ${probe_dir}/probe
                  RESULT_VARIABLE probe_result OUTPUT_QUIET ERROR_QUIET)
  if(probe_result EQUAL 0)
    set(fuzz_ok TRUE)
  endif()
endif()
set(ANNEALER_FUZZ_SMOKE AUTO CACHE STRING
    "Build the fuzz targets with clang and run each briefly in ctest: AUTO (when clang++ with libFuzzer is found), ON or OFF")
set_property(CACHE ANNEALER_FUZZ_SMOKE PROPERTY STRINGS AUTO ON OFF)
if(ANNEALER_FUZZ_SMOKE STREQUAL "AUTO")
  set(fuzz_smoke ${fuzz_ok})
elseif(ANNEALER_FUZZ_SMOKE)
  if(NOT fuzz_ok)
    message(FATAL_ERROR "ANNEALER_FUZZ_SMOKE=ON needs clang++ with libFuzzer (Debian: clang, which .ci/setup installs)")
  endif()
  set(fuzz_smoke TRUE)
else()
  set(fuzz_smoke FALSE)
endif()

if(fuzz_smoke)
  include(ExternalProject)
  set(fuzz_build ${CMAKE_BINARY_DIR}/fuzz-smoke)
  set(fuzz_targets problem_reader_fuzz schedule_eval_fuzz config_fuzz onnx_import_fuzz)
  if(CMAKE_GENERATOR MATCHES "Makefiles")
    set(fuzz_build_command $(MAKE) ${fuzz_targets})
  else()
    set(fuzz_build_command ${CMAKE_COMMAND} --build ${fuzz_build} --target ${fuzz_targets})
  endif()
  ExternalProject_Add(fuzz_smoke
    SOURCE_DIR ${PROJECT_SOURCE_DIR}
    BINARY_DIR ${fuzz_build}
    CMAKE_ARGS -DCMAKE_CXX_COMPILER=${ANNEALER_CLANGXX} -DCMAKE_BUILD_TYPE=RelWithDebInfo
               -DANNEALER_BUILD_FUZZERS=ON -DANNEALER_BUILD_TESTS=OFF -DANNEALER_BUILD_BENCH=OFF
    # Only the fuzz targets (not the sanitized CLI and tools). With Makefiles, $(MAKE) shares the
    # parent's -j jobserver; another generator builds them by name.
    BUILD_COMMAND ${fuzz_build_command}
    INSTALL_COMMAND ""
    BUILD_ALWAYS ON  # the sub-build's own dependency scan decides what to rebuild
    USES_TERMINAL_BUILD OFF)
  foreach(fuzzer IN LISTS fuzz_targets)
    set(found ${fuzz_build}/fuzz/found/${fuzzer})
    file(MAKE_DIRECTORY ${found})
    set(options "")
    if(fuzzer MATCHES "^(problem_reader|schedule_eval)_fuzz$")
      set(options -dict=${PROJECT_SOURCE_DIR}/fuzz/json.dict)
    elseif(fuzzer STREQUAL "onnx_import_fuzz")
      # Protobuf bytes, no dictionary; the largest seed model is ~19 KB (mobilenetv2.onnx).
      set(options -max_len=24576)
    endif()
    # New inputs go to `found` (never into the seeds); a finding fails the test and leaves its
    # input as crash-* / timeout-* in the working directory.
    add_test(NAME fuzz_smoke.${fuzzer}
             COMMAND ${fuzz_build}/fuzz/${fuzzer} -max_total_time=${ANNEALER_FUZZ_SMOKE_SECONDS}
                     -seed=${ANNEALER_FUZZ_SMOKE_SEED} -timeout=20 -rss_limit_mb=2048
                     -print_final_stats=1 ${options}
                     ${found} ${fuzz_build}/fuzz/seeds/${fuzzer}
             WORKING_DIRECTORY ${fuzz_build}/fuzz)
    # Alone, like the browser test: a fuzzer holding one of CI's two cores would slow the timed
    # end-to-end searches of a few hundred milliseconds beside it past their deadline.
    set_tests_properties(fuzz_smoke.${fuzzer} PROPERTIES RUN_SERIAL TRUE)
  endforeach()
else()
  message(STATUS "annealer: no clang++ with libFuzzer found: the fuzz smoke tests are left out")
endif()

# SPDX-License-Identifier: MIT
# Benchmarks (bench/). Included by the top CMakeLists.txt.
#
# bench/wl_*.c: workload programs that use only the standard malloc/free,
#   NOT linked with nodalloc, so run.sh can put any allocator under them
#   with LD_PRELOAD.
# bench/measure.c: the wall-time / peak-RSS wrapper used by run.sh.
# bench/bench_*.c: standalone benchmarks of internal layers (other owners);
#   linked with the whole static library and given src/ for internal.h.
# All land in <builddir>/bench/.

file(GLOB ND_BENCH_WORKLOADS CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/bench/wl_*.c)
foreach(src ${ND_BENCH_WORKLOADS} ${PROJECT_SOURCE_DIR}/bench/measure.c)
  get_filename_component(name ${src} NAME_WE)
  if(name STREQUAL "measure")
    set(name nd_measure)
  endif()
  add_executable(${name} ${src})
  target_compile_options(${name} PRIVATE ${ND_WARN} -fno-builtin-malloc -fno-builtin-free)
  target_link_libraries(${name} PRIVATE pthread)
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bench)
endforeach()

file(GLOB ND_BENCH_INTERNAL CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/bench/bench_*.c)
foreach(src ${ND_BENCH_INTERNAL})
  get_filename_component(name ${src} NAME_WE)
  add_executable(${name} ${src})
  if(name STREQUAL "bench_policy")
    # the public API through the shared library: thread-local accesses
    # cost what they cost under LD_PRELOAD (bench/policy.sh)
    target_compile_options(${name} PRIVATE ${ND_WARN} -fno-builtin-malloc -fno-builtin-free)
    target_link_libraries(${name} PRIVATE nodalloc)
    set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bench)
    continue()
  endif()
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include)
  target_compile_options(${name} PRIVATE ${ND_WARN})
  # whole archive: constructor and malloc override come in unnamed
  target_link_libraries(${name} PRIVATE -Wl,--whole-archive nodalloc_static -Wl,--no-whole-archive pthread)
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bench)
endforeach()

# wl_touch and run.sh's check of BENCH_SETTLE (tests/bench_settle_test.sh).
if(NODALLOC_BUILD_TESTS)
  add_test(NAME bench.settle
    COMMAND bash ${PROJECT_SOURCE_DIR}/tests/bench_settle_test.sh ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR})
  set_tests_properties(bench.settle PROPERTIES LABELS unit TIMEOUT 120)
  # nd_measure's -x (the exact resident set at exit, peak_kb) and -z (the exact
  # peak): tests/bench_measure_test.sh
  add_test(NAME bench.measure
    COMMAND bash ${PROJECT_SOURCE_DIR}/tests/bench_measure_test.sh ${PROJECT_BINARY_DIR})
  set_tests_properties(bench.measure PROPERTIES LABELS unit TIMEOUT 60)
  # wl_rpat does the same work under any allocator and scheduling
  add_test(NAME bench.rpat
    COMMAND bash ${PROJECT_SOURCE_DIR}/tests/bench_rpat_test.sh ${PROJECT_BINARY_DIR})
  set_tests_properties(bench.rpat PROPERTIES LABELS unit TIMEOUT 120)
  # wl_handoff and wl_batch (rows handoff, batch2): their work, no handed
  # block overwritten, bad arguments refused
  add_test(NAME bench.rows
    COMMAND bash ${PROJECT_SOURCE_DIR}/tests/bench_rows_test.sh ${PROJECT_BINARY_DIR})
  set_tests_properties(bench.rows PROPERTIES LABELS unit TIMEOUT 120)
endif()

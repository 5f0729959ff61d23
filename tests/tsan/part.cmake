# SPDX-License-Identifier: MIT
# make tsan (Makefile): the library without the malloc override
# (NODALLOC_OVERRIDE=OFF; ThreadSanitizer's runtime owns malloc) and built
# with -fsanitize=thread; multi-thread stress tests run on the nd_* API:
# the unit stress tests listed below (and test_api_heap: other threads free
# a public heap's objects while its owner allocates; test_slab_remote_norecord:
# threads that only free make their records; test_slab_units_remote: remote
# frees while the slab purge gives units back; test_heap_burst_clock: a
# worker's burst clock run out by its own call while main reads it;
# test_slab_exit_purge_race: a thread's exit purge while others free its
# objects and adopt its heap; test_large_spread_churn: spread runs of
# three policies through the spread cache with trims and forks;
# test_slab_check_double: check mode's out bits, set by the owner's pops,
# cleared by other threads' frees; test_large_tcache: a thread's kept
# large runs given back by its exit hook; test_trust_fork: forks while
# threads churn the thread, spread and node caches; test_trust_stats:
# threads exit with runs in every cache, the counts add up), compiled with the malloc family
# renamed to nd_* (they call malloc; tests/tsan/rename.h), and tests/tsan/tsan_*.c. Label tsan;
# any report fails the test (TSAN_OPTIONS exitcode); label tsan_short: the
# short set make test runs (test_slab_span: a span freed by another
# thread). Only in such a build:
# elsewhere the unit tests already run these programs on the override.
if(NOT NODALLOC_OVERRIDE)
  file(GLOB ND_TSAN_OWN CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tests/tsan/tsan_*.c)
  set(ND_TSAN_SOURCES ${ND_TSAN_OWN})
  foreach(t test_slab_stress test_page_threads test_heap_churn test_heap_exit_trim test_slab_idle_owner test_api_heap test_heap_sweep_take
      test_slab_remote_norecord test_slab_units_remote test_slab_exit_churn test_slab_span test_heap_burst_clock
      test_slab_exit_purge_race test_large_spread_churn test_slab_check_double test_large_tcache
      test_trust_fork test_trust_stats)
    if(EXISTS ${PROJECT_SOURCE_DIR}/tests/unit/${t}.c)
      list(APPEND ND_TSAN_SOURCES ${PROJECT_SOURCE_DIR}/tests/unit/${t}.c)
    endif()
  endforeach()
  set(ND_TSAN_TARGETS "")
  foreach(src ${ND_TSAN_SOURCES})
    get_filename_component(name ${src} NAME_WE)
    string(REGEX REPLACE "^(tsan_|test_)" "" name ${name})
    set(exe tsan_run_${name})
    add_executable(${exe} EXCLUDE_FROM_ALL ${src})
    target_include_directories(${exe} PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/tests)
    target_compile_options(${exe} PRIVATE ${ND_WARN} ${ND_TEST_FLAGS})
    if(src MATCHES "/tests/unit/")
      target_compile_options(${exe} PRIVATE -include ${PROJECT_SOURCE_DIR}/tests/tsan/rename.h)
    endif()
    target_compile_definitions(${exe} PRIVATE ND_SOURCE_DIR="${PROJECT_SOURCE_DIR}" ND_BINARY_DIR="${PROJECT_BINARY_DIR}")
    target_link_libraries(${exe} PRIVATE -Wl,--whole-archive nodalloc_static -Wl,--no-whole-archive pthread)
    add_test(NAME tsan.${name} COMMAND ${exe})
    # tsan_short: the programs make test runs (about 40 s on 2 cores);
    # slab_stress (about 2 min under TSan) only in make tsan
    set(labels tsan)
    if(NOT name STREQUAL "slab_stress")
      set(labels "tsan;tsan_short")
    endif()
    set_tests_properties(tsan.${name} PROPERTIES LABELS "${labels}" TIMEOUT 900
      ENVIRONMENT "TSAN_OPTIONS=exitcode=66 halt_on_error=0 second_deadlock_stack=1 history_size=4")
    list(APPEND ND_TSAN_TARGETS ${exe})
  endforeach()
  add_custom_target(tsan-programs DEPENDS ${ND_TSAN_TARGETS})
endif()

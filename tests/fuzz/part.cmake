# SPDX-License-Identifier: MIT
# Differential fuzzer of the malloc family and the nd_* calls
# (tests/fuzz/fuzz_malloc.c). Included by the top CMakeLists.txt. Each
# variant is a ctest (label fuzz): a short run in make test (seconds);
# make fuzz runs them long (ND_FUZZ_OPS, ND_FUZZ_SEED in the environment).
# Variants: the default; NODALLOC_CHECK=1; an emulated 3-node topology
# (one memoryless node); an interleave policy over two emulated nodes;
# tight: bound to an emulated 64 MiB node (ND_FUZZ_ENOMEM: requests may
# fail with ENOMEM only), so that the failure paths run under the churn
# (a large run's retry after the heaps' whole trim and the parked heaps',
# the span fallback, kept slabs given back); zeroes: calloc's and the other
# zeroing calls' bytes after frees, reallocs and cache moves, with every
# purge at the dirty limit (no decay), a small purge threshold and forked
# children, over two emulated nodes (fuzz_malloc.c, zeroes).
add_executable(fuzz_malloc ${PROJECT_SOURCE_DIR}/tests/fuzz/fuzz_malloc.c)
target_include_directories(fuzz_malloc PRIVATE ${PROJECT_SOURCE_DIR}/include)
target_compile_options(fuzz_malloc PRIVATE ${ND_WARN} ${ND_TEST_FLAGS})
target_link_libraries(fuzz_malloc PRIVATE -Wl,--whole-archive nodalloc_static -Wl,--no-whole-archive pthread)

function(nd_fuzz name seed)
  add_test(NAME fuzz.${name} COMMAND fuzz_malloc ${seed} 4000 2)
  set_tests_properties(fuzz.${name} PROPERTIES LABELS fuzz TIMEOUT 3600
    ENVIRONMENT "ND_FUZZ_VARIANT=${name};${ARGN}")
endfunction()
nd_fuzz(default 1)
nd_fuzz(check 2 NODALLOC_CHECK=1)
nd_fuzz(emulated 3 "NODALLOC_TOPOLOGY=0: cpus=0 mem=2G\\; 1: cpus=1 mem=2G\\; 2: mem=0")
nd_fuzz(interleave 4 "NODALLOC_TOPOLOGY=0: cpus=0 mem=2G\\; 1: cpus=1 mem=2G" NODALLOC_POLICY=interleave:0-1)
nd_fuzz(zeroes 7 "NODALLOC_TOPOLOGY=0: cpus=0 mem=2G\\; 1: cpus=1 mem=2G" NODALLOC_PURGE_DECAY_MS=0
  NODALLOC_PURGE_THRESHOLD=64K ND_FUZZ_FORK=1)
nd_fuzz(tight 5 "NODALLOC_TOPOLOGY=0: cpus=0 mem=256M\\; 1: cpus=1 mem=64M\\; 2: mem=0" NODALLOC_POLICY=bind:1 ND_FUZZ_ENOMEM=1)


# Multi-threaded fuzzer of everything at once (tests/fuzz/fuzz_threads.c):
# positions whose threads exit and are replaced, each drawing random
# allocations of every entry point and size band, frees (sized too),
# reallocs, cross-thread frees and reallocs through an exchange, policy
# changes, migrations (real CPUs and emulated ones), public heaps, per-CPU
# areas, tables, trims and forks (each child runs a thread of its own, which
# trims and takes the snapshots first). make test: a few seconds each; make fuzz:
# ND_FUZZ_OPS operations. threads: two emulated nodes, forks; memless: three
# nodes, CPU 1's node memoryless, no decay, check mode, a small purge
# threshold; tight: small nodes, ENOMEM allowed.
add_executable(fuzz_threads ${PROJECT_SOURCE_DIR}/tests/fuzz/fuzz_threads.c)
target_include_directories(fuzz_threads PRIVATE ${PROJECT_SOURCE_DIR}/include)
target_compile_options(fuzz_threads PRIVATE ${ND_WARN} ${ND_TEST_FLAGS})
if(NOT NODALLOC_OVERRIDE)
  target_compile_definitions(fuzz_threads PRIVATE ND_FUZZ_NO_OVERRIDE=1)
endif()
target_link_libraries(fuzz_threads PRIVATE -Wl,--whole-archive nodalloc_static -Wl,--no-whole-archive pthread)
function(nd_fuzz_threads name seed ops)
  add_test(NAME fuzz.${name} COMMAND fuzz_threads ${seed} ${ops} 4)
  set_tests_properties(fuzz.${name} PROPERTIES LABELS fuzz TIMEOUT 3600
    ENVIRONMENT "ND_FUZZ_VARIANT=${name};${ARGN}")
endfunction()
nd_fuzz_threads(threads 11 20000 "NODALLOC_TOPOLOGY=0: cpus=0 mem=2G\\; 1: cpus=1 mem=2G")
nd_fuzz_threads(threads_memless 12 12000 "NODALLOC_TOPOLOGY=0: cpus=0 mem=2G\\; 1: mem=2G\\; 2: cpus=1 mem=0\\; distance: 2-0=30 2-1=20"
  NODALLOC_PURGE_DECAY_MS=0 NODALLOC_PURGE_THRESHOLD=64K NODALLOC_CHECK=1)
nd_fuzz_threads(threads_tight 13 12000 "NODALLOC_TOPOLOGY=0: cpus=0 mem=256M\\; 1: cpus=1 mem=96M\\; 2: mem=0"
  ND_FUZZ_ENOMEM=1)
# threads_snapfork: forks amid the statistics snapshots (ND_FUZZ_FORK_SNAP),
# more of them (ND_FUZZ_TRIM); each child's thread takes its own first.
# The snapshots were once taken under a mutex of the fuzzer's: a child
# inherited it held and its thread waited for good (one hang in 2,979 forks
# under ND_FUZZ_FORK=200 ND_FUZZ_TRIM=500; with this variant, every child
# of a snapshot's fork).
nd_fuzz_threads(threads_snapfork 15 6000 "NODALLOC_TOPOLOGY=0: cpus=0 mem=2G\\; 1: cpus=1 mem=2G"
  ND_FUZZ_TRIM=40 ND_FUZZ_FORK_SNAP=1)
if(NOT NODALLOC_OVERRIDE)
  # make tsan: the nd_* calls only, no fork (ThreadSanitizer's)
  set_target_properties(fuzz_threads PROPERTIES EXCLUDE_FROM_ALL ON)
  if(TARGET tsan-programs)
    add_dependencies(tsan-programs fuzz_threads)
  endif()
  add_test(NAME tsan.fuzz_threads COMMAND fuzz_threads 14 6000 4)
  set_tests_properties(tsan.fuzz_threads PROPERTIES LABELS "tsan;tsan_short" TIMEOUT 900
    ENVIRONMENT "TSAN_OPTIONS=exitcode=66 halt_on_error=0 second_deadlock_stack=1 history_size=4;ND_FUZZ_FORK=0;NODALLOC_TOPOLOGY=0: cpus=0 mem=2G\\; 1: cpus=1 mem=2G")
endif()

# Bad input fuzzers (tests/fuzz/fuzz_badinput.c): every NODALLOC_* variable
# with hostile values in children running a malloc workload, and random
# nodactl argument lists. make test: 197 and 2000 cases (seconds each); make fuzz:
# ND_FUZZ_OPS / 100 cases.
add_executable(fuzz_badinput ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_badinput.c)
target_compile_options(fuzz_badinput PRIVATE ${ND_WARN} ${ND_TEST_FLAGS})
target_link_libraries(fuzz_badinput PRIVATE -Wl,--whole-archive nodalloc_static -Wl,--no-whole-archive pthread)
add_test(NAME fuzz.env COMMAND fuzz_badinput env 5 180)
add_test(NAME fuzz.nodactl COMMAND fuzz_badinput nodactl 6 2000 $<TARGET_FILE:nodactl>)
set_tests_properties(fuzz.env fuzz.nodactl PROPERTIES LABELS fuzz TIMEOUT 3600)

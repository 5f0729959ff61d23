# SPDX-License-Identifier: MIT
# Real programs under LD_PRELOAD=libnodalloc.so (tests/integration,
# docs/malloc.md): each script runs its program with and without the
# library and requires identical output, and the program's statistics at
# exit (or nd_node_of) must show that nodalloc served it (common.sh).
# Included by the top CMakeLists.txt. Exit 77 = the program is not
# installed (scripts/install-deps.sh installs them): the test is reported
# skipped. pysuite: python3's own regression tests (PYTHONMALLOC=malloc,
# audit25). threads: xz, zstd, pigz, sort, perl threads; fork: bash
# subshells, python3 forking threads and a pool; compilers: g++, clang++,
# cmake (C++ new/delete throughout); redis: redis-server (linked with
# jemalloc, its malloc calls preloaded) and postgres: postmaster and
# forked backends, each with its own statistics (apps24).
foreach(prog python pysuite sqlite memcached redis postgres threads fork compilers)
  add_test(NAME integration.${prog}
    COMMAND bash ${PROJECT_SOURCE_DIR}/tests/integration/run_${prog}.sh $<TARGET_FILE:nodalloc>)
  set_tests_properties(integration.${prog} PROPERTIES LABELS integration TIMEOUT 600
    SKIP_RETURN_CODE 77)
endforeach()

# C++ new/delete through nodalloc's malloc, the library linked (no preload).
add_executable(nd_cxx_new ${PROJECT_SOURCE_DIR}/tests/integration/cxx_new.cpp)
set_target_properties(nd_cxx_new PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON)
target_compile_options(nd_cxx_new PRIVATE -Wall -Wextra ${ND_TEST_FLAGS})
# --no-as-needed: linked for its malloc even where the program names only nd_node_of
target_link_options(nd_cxx_new PRIVATE -Wl,--no-as-needed)
target_link_libraries(nd_cxx_new PRIVATE nodalloc)
add_test(NAME integration.cxx_new COMMAND nd_cxx_new)
set_tests_properties(integration.cxx_new PROPERTIES LABELS integration TIMEOUT 120)

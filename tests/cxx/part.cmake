# SPDX-License-Identifier: MIT
# C++17 support (include/nodalloc.hpp): pmr resources, STL allocators and
# RAII helpers, checked for placement under an emulated topology, built
# with the project's compiler and, where installed, with clang++ too.
# Included by the top CMakeLists.txt.
set(ND_CXX_WARN -Wall -Wextra -pedantic)
if(ND_WERROR)
  list(APPEND ND_CXX_WARN -Werror)
endif()
add_executable(test_cxx_placement ${PROJECT_SOURCE_DIR}/tests/cxx/test_cxx_placement.cpp)
set_target_properties(test_cxx_placement PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON CXX_EXTENSIONS OFF)
target_compile_options(test_cxx_placement PRIVATE ${ND_CXX_WARN})
target_link_options(test_cxx_placement PRIVATE -Wl,--no-as-needed)
target_link_libraries(test_cxx_placement PRIVATE nodalloc)
add_test(NAME cxx.placement COMMAND test_cxx_placement)
set_tests_properties(cxx.placement PROPERTIES LABELS unit TIMEOUT 120
  ENVIRONMENT "NODALLOC_TOPOLOGY=0: cpus=0-1 mem=512M\\; 1: cpus=2-3 mem=512M\\; 2: mem=64M\\; distance: 0-1=20, 0-2=30, 1-2=30")

# Again in check mode: the sized frees of the resources and allocators
# (nd_free_sized, nd_free_aligned_sized) must name each block's size.
add_test(NAME cxx.placement_check COMMAND test_cxx_placement)
set_tests_properties(cxx.placement_check PROPERTIES LABELS unit TIMEOUT 120
  ENVIRONMENT "NODALLOC_CHECK=1;NODALLOC_TOPOLOGY=0: cpus=0-1 mem=512M\\; 1: cpus=2-3 mem=512M\\; 2: mem=64M\\; distance: 0-1=20, 0-2=30, 1-2=30")

# The header on its own, as a user's clang++ sees it (skipped without clang++).
find_program(ND_CLANGXX clang++)
if(ND_CLANGXX)
  add_test(NAME cxx.header_clang
    COMMAND ${ND_CLANGXX} -std=c++17 -Wall -Wextra -pedantic -Werror -fsyntax-only
      -I${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/tests/cxx/test_cxx_placement.cpp)
  set_tests_properties(cxx.header_clang PROPERTIES LABELS unit TIMEOUT 120)
endif()

# The operators new and delete are the library's (src/malloc.c), out of
# memory throws std::bad_alloc after the new_handler, and check mode sees a
# sized delete's size. Again in check mode: every size the test passes is
# the block's.
add_executable(test_cxx_new ${PROJECT_SOURCE_DIR}/tests/cxx/test_cxx_new.cpp)
set_target_properties(test_cxx_new PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON CXX_EXTENSIONS OFF)
target_compile_options(test_cxx_new PRIVATE ${ND_CXX_WARN} -fsized-deallocation) # clang before 19: off by default
target_link_options(test_cxx_new PRIVATE -Wl,--no-as-needed)
target_link_libraries(test_cxx_new PRIVATE nodalloc ${CMAKE_DL_LIBS})
add_test(NAME cxx.new COMMAND test_cxx_new)
set_tests_properties(cxx.new PROPERTIES LABELS unit TIMEOUT 120)
add_test(NAME cxx.new_check COMMAND test_cxx_new)
set_tests_properties(cxx.new_check PROPERTIES LABELS unit TIMEOUT 120 ENVIRONMENT "NODALLOC_CHECK=1")

# SPDX-License-Identifier: MIT
# The NUMA VM test bed (tests/vm, docs/testbed.md). Included by the top
# CMakeLists.txt. Every tests/vm/vm_<name>.c is one in-VM test program,
# linked against the shared libnodalloc (so it also runs on nodalloc's
# malloc) and put in ${PROJECT_BINARY_DIR}/vm-bin; run.sh boots each QEMU
# topology with all of them. One ctest per topology, label "vm".
file(GLOB ND_VM_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tests/vm/vm_*.c ${PROJECT_SOURCE_DIR}/tests/vm/vm_*.cpp)
set(ND_VM_TARGETS "")
foreach(src ${ND_VM_SOURCES})
  get_filename_component(name ${src} NAME_WE)
  add_executable(${name} ${src})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/tests/vm ${PROJECT_SOURCE_DIR}/tests)
  target_compile_options(${name} PRIVATE ${ND_WARN})
  if(src MATCHES "\\.cpp$")
    set_target_properties(${name} PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON)
  endif()
  # --no-as-needed: the library must be loaded (and its malloc interpose
  # libc's) even while the test only has weak references to it
  target_link_options(${name} PRIVATE -Wl,--no-as-needed)
  target_link_libraries(${name} PRIVATE nodalloc pthread)
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/vm-bin)
  list(APPEND ND_VM_TARGETS ${name})
endforeach()

# The program vm_nodactl runs under nodactl, dynamic and static (not a test:
# no vm_ prefix; run.sh puts it and nodactl in the initramfs's /bin).
foreach(variant probe_nodactl probe_nodactl_static)
  add_executable(${variant} ${PROJECT_SOURCE_DIR}/tests/vm/probe_nodactl.c)
  target_compile_options(${variant} PRIVATE ${ND_WARN})
  set_target_properties(${variant} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/vm-bin)
endforeach()
target_link_options(probe_nodactl_static PRIVATE -static)
list(APPEND ND_VM_TARGETS probe_nodactl probe_nodactl_static nodactl)

# Keep in step with VM_TOPOLOGIES in tests/vm/topologies.sh.
set(ND_VM_TOPOLOGIES two memless tiered sixteen)
foreach(topo ${ND_VM_TOPOLOGIES})
  add_test(NAME vm.${topo} COMMAND bash ${PROJECT_SOURCE_DIR}/tests/vm/run.sh ${PROJECT_BINARY_DIR} ${topo})
  # 77: no qemu / static busybox / kernel package here (run.sh says why).
  # One VM at a time (each wants both cores under TCG); unit tests still
  # run beside it.
  set_tests_properties(vm.${topo} PROPERTIES LABELS vm TIMEOUT 900 SKIP_RETURN_CODE 77
    RESOURCE_LOCK nd_vm)
endforeach()

# The report for the issue note: placement table per topology and the
# pagemap contiguity figures (boots every topology).
add_custom_target(vm-report
  COMMAND bash ${PROJECT_SOURCE_DIR}/tests/vm/report.sh ${PROJECT_BINARY_DIR}
  DEPENDS nodalloc ${ND_VM_TARGETS}
  USES_TERMINAL)


# SPDX-License-Identifier: MIT
# Thin wrapper over CMake. The two commands of the README:
#   make demo   build everything and run a real program under nodalloc
#   make test   install what the tests need (apt), build, run every test
#
# make test builds four trees and runs:
#   $(BUILD)        gcc, RelWithDebInfo: every test (unit, integration, VMs)
#   $(CLANG_BUILD)  clang: every test but the VMs (they test placement, which
#                   the compiler does not change, and cost ~65 s a run)
#   $(DEBUG_BUILD)  gcc, -O0 with ND_DEBUG (ND_ASSERT on): the unit tests
#   $(TSAN_BUILD)   gcc -fsanitize=thread: the short ThreadSanitizer set
#                   (label tsan_short: every tsan test but slab_stress;
#                   any report fails); make tsan runs them all
# and reports every tree's failures before failing.
BUILD ?= build
CLANG_BUILD ?= build-clang
DEBUG_BUILD ?= build-debug
TSAN_BUILD ?= build-tsan
JOBS ?= $(shell nproc)

.PHONY: all build build-clang build-debug build-tsan demo test tsan fuzz deps bench clean install vm-report

all: build

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo

$(CLANG_BUILD)/CMakeCache.txt:
	cmake -S . -B $(CLANG_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++

$(DEBUG_BUILD)/CMakeCache.txt:
	cmake -S . -B $(DEBUG_BUILD) -DCMAKE_BUILD_TYPE=Debug -DND_DEBUG=ON

$(TSAN_BUILD)/CMakeCache.txt:
	cmake -S . -B $(TSAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNODALLOC_OVERRIDE=OFF \
	  -DCMAKE_C_FLAGS=-fsanitize=thread -DCMAKE_CXX_FLAGS=-fsanitize=thread \
	  -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread -DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=thread

build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

build-clang: $(CLANG_BUILD)/CMakeCache.txt
	cmake --build $(CLANG_BUILD) -j $(JOBS)

build-debug: $(DEBUG_BUILD)/CMakeCache.txt
	cmake --build $(DEBUG_BUILD) -j $(JOBS)

deps:
	bash scripts/install-deps.sh

demo: build
	bash scripts/demo.sh $(BUILD)

build-tsan: $(TSAN_BUILD)/CMakeCache.txt
	cmake --build $(TSAN_BUILD) -j $(JOBS) --target tsan-programs

test: deps build build-clang build-debug build-tsan
	@st=0; \
	echo "== gcc ($(BUILD)): all tests"; \
	(cd $(BUILD) && ctest --output-on-failure -j $(JOBS)) || st=1; \
	echo "== clang ($(CLANG_BUILD)): all tests but the VMs"; \
	(cd $(CLANG_BUILD) && ctest --output-on-failure -j $(JOBS) -LE vm) || st=1; \
	echo "== gcc -O0 ND_DEBUG ($(DEBUG_BUILD)): unit tests"; \
	(cd $(DEBUG_BUILD) && ctest --output-on-failure -j $(JOBS) -L unit) || st=1; \
	echo "== gcc ThreadSanitizer ($(TSAN_BUILD)): the short tsan set"; \
	(cd $(TSAN_BUILD) && ctest --output-on-failure -j $(JOBS) -L tsan_short) || st=1; \
	if [ $$st = 0 ]; then echo "make test: all four builds passed"; \
	else echo "make test: FAILED (see above)"; fi; \
	exit $$st

# ThreadSanitizer (gcc -fsanitize=thread) over the multi-thread stress
# tests on the nd_* API, the library without its malloc override
# (tests/tsan): all of them, slab_stress included (about 2.5 min on 2
# cores); make test runs the short set.
tsan: deps build-tsan
	cd $(TSAN_BUILD) && ctest --output-on-failure -j $(JOBS) -L tsan

# The fuzzers (tests/fuzz) long: make test runs each differential variant
# for 4000 operations, the multi-threaded one (fuzz_threads) for 12000 to
# 20000, and the bad-input fuzzers (every NODALLOC_* variable,
# nodactl's arguments) for a few hundred cases; this for FUZZ_OPS
# operations (FUZZ_OPS / 100 bad-input cases) with a fresh seed (printed).
FUZZ_OPS ?= 400000
FUZZ_SEED ?= $(shell date +%s)
fuzz: deps build
	cd $(BUILD) && ND_FUZZ_OPS=$(FUZZ_OPS) ND_FUZZ_SEED=$(FUZZ_SEED) \
	  ctest -V -j $(JOBS) -L fuzz | grep -aE 'fuzz_malloc|fuzz_threads|fuzz:|FAIL|tests passed|Failed'

bench: deps build
	bash bench/run.sh $(BUILD)

# Placement table per VM topology and pagemap contiguity (tests/vm).
vm-report: deps build
	cmake --build $(BUILD) --target vm-report

install: build
	cmake --install $(BUILD)

clean:
	rm -rf $(BUILD) $(CLANG_BUILD) $(DEBUG_BUILD) $(TSAN_BUILD)

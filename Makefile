# Thin wrapper over CMake. The two commands of the README:
#   make demo   build everything and run a real program under nodalloc
#   make test   install what the tests need (apt), build, run every test
BUILD ?= build
JOBS ?= $(shell nproc)

.PHONY: all build demo test deps bench clean install vm-report

all: build

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo

build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

deps:
	bash scripts/install-deps.sh

demo: build
	bash scripts/demo.sh $(BUILD)

test: deps build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

bench: deps build
	bash bench/run.sh $(BUILD)

# Placement table per VM topology and pagemap contiguity (tests/vm).
vm-report: deps build
	cmake --build $(BUILD) --target vm-report

install: build
	cmake --install $(BUILD)

clean:
	rm -rf $(BUILD)

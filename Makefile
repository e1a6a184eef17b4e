# tarn: the two commands are `make demo` and `make test`.
BUILD_DIR ?= build
DEBUG_DIR ?= build-debug
JOBS ?= $(shell nproc)
TARN := $(BUILD_DIR)/bin/tarn

.PHONY: all build debug deps demo test unit integration bench format format-check clean

all: build

deps:
	@scripts/install-deps

$(BUILD_DIR)/build.ninja: CMakeLists.txt | deps
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Release

build: deps $(BUILD_DIR)/build.ninja
	cmake --build $(BUILD_DIR) -j $(JOBS)

debug: deps
	cmake -S . -B $(DEBUG_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DTARN_SANITIZE=ON
	cmake --build $(DEBUG_DIR) -j $(JOBS)

demo: build
	scripts/demo $(TARN)

unit: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)

integration: build
	python3 -m pytest -q -rs tests/integration

test: build format-check
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)
	TARN_BIN=$(abspath $(TARN)) python3 -m pytest -q -rs tests/integration

bench: build
	bench/run-all $(TARN)

format:
	clang-format -i $$(git ls-files '*.cpp' '*.h')

format-check:
	@clang-format --dry-run --Werror $$(git ls-files '*.cpp' '*.h') && echo "clang-format: clean"

clean:
	rm -rf $(BUILD_DIR) $(DEBUG_DIR)

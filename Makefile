# Makefile: a thin front for CMake. `make quickstart` and `make test` are the README's two commands.
BUILD ?= build
ASAN_BUILD ?= build-asan
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
SOURCES = $(shell find src include tests bench cuda providers policies -name '*.[ch]' 2>/dev/null | sort)

.PHONY: all build quickstart deps run test test-plain test-asan format format-check bench clean

all: build

# The Debian packages, then the tests' Python packages (moto) into .venv, and the checks of
# terraform/ (checkov, python-hcl2) into .venv-iac.
deps:
	./scripts/install-deps
	./scripts/test-venv
	./scripts/iac-venv

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCASTOR_WERROR=ON $(CMAKE_FLAGS)

build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

run: build
	./$(BUILD)/castor

quickstart: deps
	$(MAKE) run

$(ASAN_BUILD)/CMakeCache.txt:
	cmake -S . -B $(ASAN_BUILD) -DCASTOR_WERROR=ON -DCASTOR_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug $(CMAKE_FLAGS)

test-plain: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-asan: $(ASAN_BUILD)/CMakeCache.txt
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -j $(JOBS)

# All the tests: the style check, the suite, then the suite again under ASan and UBSan.
test: format-check test-plain test-asan

format:
	clang-format -i $(SOURCES)

format-check:
	@clang-format --dry-run --Werror $(SOURCES) && echo "format-check: $(words $(SOURCES)) files follow .clang-format"

bench: build
	./$(BUILD)/castor-bench-model

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)

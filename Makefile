# Makefile: a thin front for CMake. `make quickstart` and `make test` are the README's two commands.
BUILD ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
FUZZ_RUNS ?= 20000
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
SOURCES = $(shell find src include tests bench cuda providers policies -name '*.[ch]' 2>/dev/null | sort)

.PHONY: all build quickstart deps run test test-plain test-asan test-fuzz fuzz-build fuzz-long format \
	format-check bench clean

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

# The libFuzzer targets (tests/fuzz), built by clang under ASan and UBSan in their own folder.
# FUZZ_OK: clang can link a libFuzzer program (Debian: clang and libclang-rt-14-dev).
FUZZ_OK = printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }' | \
	clang -x c -fsanitize=fuzzer,address,undefined -o /dev/null - >/dev/null 2>&1

$(FUZZ_BUILD)/CMakeCache.txt:
	cmake -S . -B $(FUZZ_BUILD) -DCMAKE_C_COMPILER=clang -DCASTOR_FUZZ=ON -DCASTOR_CUDA=OFF $(CMAKE_FLAGS)

fuzz-build: $(FUZZ_BUILD)/CMakeCache.txt
	cmake --build $(FUZZ_BUILD) --target castor-fuzz -j $(JOBS)

# A short run of every fuzz target: its corpus (crash regressions included), then FUZZ_RUNS
# executions with a fixed seed. Skipped, saying so, where clang or libFuzzer is missing.
test-fuzz:
	@if command -v clang >/dev/null 2>&1 && $(FUZZ_OK); then \
		$(MAKE) --no-print-directory fuzz-build && tests/fuzz/run $(FUZZ_RUNS) $(FUZZ_BUILD); \
	else \
		echo "test-fuzz: SKIPPED: clang with libFuzzer is not installed (./scripts/install-deps)"; \
	fi

# The long run: ten million executions of every target (scripts/fuzz-long; see README).
fuzz-long: fuzz-build
	BUILD_FUZZ=$(CURDIR)/$(FUZZ_BUILD) ./scripts/fuzz-long

# All the tests: the style check, the suite, the suite again under ASan and UBSan, then a short
# run of every fuzz target.
test: format-check test-plain test-asan test-fuzz

format:
	clang-format -i $(SOURCES)

format-check:
	@clang-format --dry-run --Werror $(SOURCES) && echo "format-check: $(words $(SOURCES)) files follow .clang-format"

bench: build
	./$(BUILD)/castor-bench-model

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)

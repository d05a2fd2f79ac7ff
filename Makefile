# Entry points (see README.md):
#   make demo   install build dependencies if missing, build, run real models
#   make test   normal + sanitizer builds with warnings as errors, all tests,
#               bounded fuzzing, ONNX conformance when ../shared is present
#   make docs   regenerate docs/ops.md (and docs/conformance.md)
#   make sdk    install the SDK, build examples/npu-plugin against it, run its conformance
#   make bench  build and run the benchmarks in bench/ (ratios against peers, see bench/RESULTS.md)
#   make python build the Python package from build/, install it in a venv, run python/tests
BUILD        ?= build
ASAN_BUILD   ?= build-asan
FUZZ_BUILD   ?= build-fuzz
BENCH_BUILD  ?= build-bench
JOBS         ?= 2
SHARED       ?= ../shared
FUZZ_SECONDS ?= 45
# ctest arguments of `make unit` and `make asan` (`make test` narrows both so
# that each test runs once: see the test target).
UNIT_CTEST   ?=
ASAN_CTEST   ?=

BUILD_DEPS = cmake make gcc libc6-dev pkg-config libprotobuf-c-dev protobuf-c-compiler libxxhash-dev libjansson-dev libsqlite3-dev
# The spirv target plugin: SPIRV-Tools (linked statically), the SPIR-V and
# Vulkan headers (the Vulkan loader is loaded at run time).
BUILD_DEPS += spirv-tools spirv-headers libvulkan-dev
TEST_DEPS  = clang libclang-rt-14-dev
# OpenCL target tests run on PoCL (headers and the dev package are for tooling
# only: xcomp loads libOpenCL.so.1 at run time and builds without them).
TEST_DEPS += ocl-icd-opencl-dev opencl-headers pocl-opencl-icd
# rocm target tests compile for AMD GPUs without one: hiprtc (in Debian's
# libamdhip64 5.x, whose -dev package also has the HIP headers), hipcc for
# architectures hiprtc predates, llvm-objdump for the MFMA disassembly check.
TEST_DEPS += libamdhip64-dev hipcc llvm
# The gfx1100 WMMA compile check: Debian's device libraries (hipcc pulls them
# in too) and LLVM 15's llvm-objdump, the first that knows WMMA; the compiler
# is the clang of PyPI's ziglang (tools/install-zig.sh).
TEST_DEPS += rocm-device-libs llvm-15
# spirv target tests run on Mesa's lavapipe (Vulkan on the CPU) through the
# Vulkan loader.
TEST_DEPS += libvulkan1 mesa-vulkan-drivers
# The Python package's step: a venv (numpy, pytest and scikit-build-core come
# from PyPI into it, not into the system Python).
TEST_DEPS += python3-venv
# The autotuner's tests: the cost model (XGBoost, loaded at run time) and the
# report's plots (gnuplot).
TEST_DEPS += libxgboost0 gnuplot-nox
# Only for `make bench`: the SGEMM peer.
BENCH_DEPS = libopenblas-dev

.PHONY: all deps test-deps bench-deps build demo test unit asan fuzz conformance sdk python bench docs clean

all: build

deps:
	@tools/install-deps.sh $(BUILD_DEPS)

test-deps: deps
	@tools/install-deps.sh $(TEST_DEPS)
	@tools/install-cuda-tools.sh .cuda-tools
	@tools/install-zig.sh .zig

bench-deps: deps
	@tools/install-deps.sh $(BENCH_DEPS)

build: deps
	cmake -S . -B $(BUILD) -DXCOMP_WERROR=ON
	cmake --build $(BUILD) -j$(JOBS)

demo: build
	tools/demo.sh $(BUILD)/xcomp $(SHARED) $(BUILD)/demo

unit: build
	ctest --test-dir $(BUILD) --output-on-failure -j$(JOBS) $(UNIT_CTEST)

asan: deps
	cmake -S . -B $(ASAN_BUILD) -DXCOMP_WERROR=ON -DXCOMP_SANITIZE=ON
	cmake --build $(ASAN_BUILD) -j$(JOBS)
	ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp:print_suppressions=0 \
	  UBSAN_OPTIONS=print_stacktrace=1 ctest --test-dir $(ASAN_BUILD) --output-on-failure -j$(JOBS) $(ASAN_CTEST)
	# The generated kernels themselves under ASan: the cpu target's C built with
	# -fsanitize=address and loaded into the instrumented xcomp, so a kernel that
	# reads or writes outside a buffer (a mask dropped wrongly, say) stops the case.
	ASAN_OPTIONS=detect_leaks=0 XCOMP_CPU_CFLAGS="-O1 -g -fsanitize=address -fno-omit-frame-pointer -fPIC -shared -fopenmp" \
	  $(ASAN_BUILD)/xcomp conform --op-suite --target cpu --seed 1 --cases-per-op 2 \
	  --dtypes f32,f16,bf16,i32,i64,bool -j$(JOBS) --strict --report $(ASAN_BUILD)/conformance-opsuite-cpu-asan.txt \
	  >$(ASAN_BUILD)/conformance-opsuite-cpu-asan.log
	@echo "asan: op suite with ASan-built cpu kernels: $$(tail -1 $(ASAN_BUILD)/conformance-opsuite-cpu-asan.txt)"

fuzz: test-deps
	tools/fuzz.sh $(FUZZ_BUILD) $(FUZZ_SECONDS) $(JOBS)

conformance: build
	tools/conformance.sh $(BUILD)/xcomp $(SHARED) $(BUILD) $(JOBS)

# The SDK as a vendor uses it: install build/ to a prefix, build
# examples/npu-plugin against that prefix alone, run the conformance on it.
sdk: build
	tools/sdk_check.sh $(BUILD) $(SHARED) $(BUILD) $(JOBS)

# The Python package built from build/ (its libxcomp.so, nothing compiled
# again) into build/python-venv, then python/tests (docs/python.md).
python: build
	tools/python_check.sh $(BUILD) $(SHARED)

# Benchmarks: programs that print ratios against a peer measured in the same
# run; never tests. OpenBLAS runs its best kernel for this command alone
# (docs: ../shared/docs/PERFORMANCE.md), 2 threads on both sides.
bench: bench-deps
	cmake -S . -B $(BENCH_BUILD) -DXCOMP_WERROR=ON -DXCOMP_BENCH=ON
	cmake --build $(BENCH_BUILD) -j$(JOBS) --target bench_sgemm bench_layernorm bench_models
	env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 $(BENCH_BUILD)/bench_sgemm
	env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 $(BENCH_BUILD)/bench_sgemm --knobs 2048 64 64 32 16 64 32 64 32 32
	OMP_NUM_THREADS=2 $(BENCH_BUILD)/bench_layernorm
	OMP_NUM_THREADS=2 $(BENCH_BUILD)/bench_models

# Every step runs even when an earlier one fails, so one run shows everything.
# Each ctest test runs once: those labelled vendor-compile (their time is in
# NVRTC/hiprtc/hipcc) in build/, all others under ASan + UBSan in build-asan/.
test: test-deps
	@fail=""; \
	$(MAKE) --no-print-directory unit UNIT_CTEST="-L vendor-compile" || fail="$$fail unit"; \
	$(MAKE) --no-print-directory python || fail="$$fail python"; \
	$(MAKE) --no-print-directory asan ASAN_CTEST="-LE vendor-compile" || fail="$$fail asan"; \
	$(MAKE) --no-print-directory fuzz || fail="$$fail fuzz"; \
	$(MAKE) --no-print-directory conformance || fail="$$fail conformance"; \
	$(MAKE) --no-print-directory sdk || fail="$$fail sdk"; \
	if [ -n "$$fail" ]; then echo "make test: FAILED:$$fail"; exit 1; fi; \
	echo "make test: all steps passed"

docs: build
	$(BUILD)/xcomp ops --markdown > docs/ops.md
	@if [ -d $(SHARED)/onnx-backend-tests ]; then \
	  $(BUILD)/xcomp conform --target ref --onnx-tests $(SHARED)/onnx-backend-tests \
	    -j $(JOBS) --markdown docs/conformance.md > /dev/null; \
	  echo "wrote docs/ops.md, docs/conformance.md"; \
	else echo "wrote docs/ops.md ($(SHARED)/onnx-backend-tests absent: docs/conformance.md kept)"; fi

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD) $(BENCH_BUILD)

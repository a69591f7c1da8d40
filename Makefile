# Floe: the two commands of the README, plus developer targets.
#   make demo   set up, build, run scenes/dam_break.lua headless into out/dam_break
#   make test   set up, build, run the whole test suite
BUILD ?= build
FLOE = $(BUILD)/core/floe

.PHONY: all setup build demo test bench sanitize sanitize-generic valgrind fuzz clean

all: build

setup:
	@./scripts/bootstrap.sh
	@[ -f $(BUILD)/build.ninja ] || meson setup $(BUILD) --buildtype=release

build: setup
	@ninja -C $(BUILD)

demo: build
	$(FLOE) run scenes/dam_break.lua --out out/dam_break --force

test: build
	@BUILD=$(BUILD) ./scripts/test.sh

bench: build
	$(FLOE) bench neighbours --n 100000
	$(FLOE) bench neighbours --n 1000000 --iters 5
	$(FLOE) bench scenes/bench/dam_break_59k.lua --force

# address + undefined sanitizers over the whole suite, twice: the generic
# build (no AVX2: the scalar and periodic paths; sanitize-generic, which CI
# runs) and the native one (the AVX2 rows, the grouped list build, the
# kernel sums)
sanitize-generic: setup
	@[ -f build-asan/build.ninja ] || meson setup build-asan --buildtype=debugoptimized -Db_sanitize=address,undefined -Db_lundef=false -Dnative=false
	@ninja -C build-asan
	@BUILD=build-asan UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ./scripts/test.sh

sanitize: sanitize-generic
	@[ -f build-asan-native/build.ninja ] || meson setup build-asan-native --buildtype=debugoptimized -Db_sanitize=address,undefined -Db_lundef=false -Dnative=true
	@ninja -C build-asan-native
	@BUILD=build-asan-native UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ./scripts/test.sh

# valgrind memcheck over the whole suite (Criterion runs each test in a
# child; every test's own timeout and meson's scaled by 50, valgrind's
# slowdown: test_timeout_scale), on a generic build of its own: valgrind does not decode AVX-512,
# which the native build uses where the CPU has it (SIGILL there).
# Not traced: the system's programs a test starts (sh, tr, python3; their
# leaks are not Floe's) and floe-view, whose GL driver (Mesa, unloaded at
# exit) leaks where valgrind cannot name it and whose dlopen trips ld.so's
# strncmp over-read; the sanitizer builds check the viewer's memory errors
# (test_viewer.c). Only definite leaks are errors: libgomp's worker
# threads, alive at exit, leave their TLS "possibly lost", which would
# turn every floe process's exit status into valgrind's.
valgrind: setup
	@FLOE_WITH_VALGRIND=1 ./scripts/bootstrap.sh
	@[ -f build-valgrind/build.ninja ] || meson setup build-valgrind --buildtype=debugoptimized -Dnative=false
	@meson configure build-valgrind -Dtest_timeout_scale=50 > /dev/null
	@ninja -C build-valgrind
	@BUILD=build-valgrind FLOE_KEEP_MODULES=1 ./scripts/test.sh --wrap='valgrind --error-exitcode=9 --leak-check=full --errors-for-leak-kinds=definite --trace-children=yes --trace-children-skip=/usr/*,/bin/*,*/floe-view --quiet'

# libFuzzer over each target of tests/fuzz for FUZZ_SECONDS (clang, address
# and undefined sanitizers); new inputs go to build-fuzz/corpus/<target>,
# crashes to build-fuzz/crashes/. A crash found: copy it to
# tests/fuzz/crashes/<target>/ and fix it (the suite then runs it, test_fuzz).
FUZZ_SECONDS ?= 60
FUZZ_TARGETS = yaml ply params mesh heightmap
fuzz:
	@FLOE_WITH_FUZZ=1 ./scripts/bootstrap.sh
	@[ -f build-fuzz/build.ninja ] || CC=clang meson setup build-fuzz --buildtype=debugoptimized -Dfuzz=true -Dtests=false -Dnative=false -Db_sanitize=address,undefined -Db_lundef=false -Dc_args=-fsanitize=fuzzer-no-link
	@ninja -C build-fuzz
	@mkdir -p build-fuzz/crashes
	@for t in $(FUZZ_TARGETS); do \
	  mkdir -p build-fuzz/corpus/$$t; \
	  echo "fuzz: $$t for $(FUZZ_SECONDS) s"; \
	  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 build-fuzz/tests/fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) \
	    -artifact_prefix=build-fuzz/crashes/$$t- -print_final_stats=1 build-fuzz/corpus/$$t tests/fuzz/corpus/$$t || exit 1; \
	done

clean:
	rm -rf $(BUILD) build-asan build-asan-native build-valgrind build-fuzz

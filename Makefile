# wb — build, test, install. `make help` lists the targets.
PREFIX  ?= /usr/local
DESTDIR ?=
BUILD   ?= build

CC      ?= gcc
PKGS    := lua5.4 yaml-0.1 libcjson
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null || echo -I/usr/include/lua5.4 -I/usr/include/cjson)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null || echo -llua5.4 -lyaml -lcjson)
WARN    := -std=c11 -Wall -Wextra -Werror
# core/ is searched by "..." includes only (-iquote): core/spawn.h and core/unwind.h share their
# names with <spawn.h> and the compiler's <unwind.h>, which <...> includes must still find.
OPT     ?= -O2 -g
CFLAGS_ALL = $(WARN) $(OPT) -fPIC -fvisibility=hidden -fno-omit-frame-pointer $(PKG_CFLAGS) \
             -iquote core -I$(BUILD) -DWB_DATADIR='"$(PREFIX)/share/wb"' \
             -DWB_LIBEXECDIR='"$(PREFIX)/libexec/wb"' $(CFLAGS) $(EXTRA_CFLAGS)
LIBS    := $(PKG_LIBS) -lsqlite3 -lreadline -lbpf -ldw -liberty -lelf -llzma -lz -lm
# The wb binary links Lua, libyaml, libbpf, libelf and zlib statically: five fewer shared objects
# to map and relocate at every start-up (wb's start-up is a benchmarked figure); cJSON, which
# Debian ships without a static archive, is a shared object like readline. It exports the
# Lua API, so that compiled Lua modules a recipe requires find it as they find it in lua5.4.
LUA_EXPORTS := -Wl,--export-dynamic-symbol=lua_*,--export-dynamic-symbol=luaL_*,--export-dynamic-symbol=luaopen_*
BIN_LIBS := -Wl,-Bstatic -llua5.4 -lyaml -lbpf -ldw -liberty -lelf -lbz2 -llzma -lz -lsqlite3 -Wl,-Bdynamic -lcjson -lreadline -lm -ldl -pthread $(LUA_EXPORTS)
BPF_CLANG ?= clang
BPFTOOL   ?= bpftool

CORE_SRC := $(filter-out core/main.c,$(sort $(wildcard core/*.c)))
CORE_OBJ := $(patsubst core/%.c,$(BUILD)/obj/%.o,$(CORE_SRC)) $(BUILD)/obj/embed_lua.o
LUA_SRC  := $(sort $(filter-out lua/wb/types.lua,$(wildcard lua/wb/*.lua))) $(wildcard lua/wb/*.js)
C_TESTS  := $(patsubst tests/c/%.c,$(BUILD)/tests/%,$(sort $(wildcard tests/c/*_test.c)))
EXAMPLES := $(patsubst examples/%.c,$(BUILD)/examples/%,$(sort $(wildcard examples/*.c)))


.PHONY: test-load aa all deps deps-test demo test test-repeat test-c test-lua test-cli tests-c asan bench bench-smoke install clean help mutate mutate-sample
all: $(BUILD)/wb $(BUILD)/libwb.so $(BUILD)/libwb.a $(BUILD)/libwballoc.so $(EXAMPLES)

help:
	@echo "make [all]     build build/wb, build/libwb.so, build/libwb.a and the examples"
	@echo "make deps      install missing Debian packages (root), else print the apt-get line"
	@echo "make demo      deps + build + the full application profile of the bundled example"
	@echo "make test      deps + build + every test (ends with 'N passed, N failed'); without root,"
	@echo "               Slurm or Chromium the suites needing them are reported as skips"
	@echo "make test-repeat N=20 LOAD=2 ONLY='lua cli'  the flakiness hunt: suites run N times"
	@echo "               beside LOAD busy loops; a table of runs and failures per suite"
	@echo "make test-load the suites that measure time, beside LOAD_HOGS=2 CPU-bound loops (CI runs it)"
	@echo "make aa        A/A under load: the same work twice, hogs on one side only; false verdicts"
	@echo "make asan      the whole test suite built with AddressSanitizer + UBSan"
	@echo "make fuzz      each libFuzzer target for FUZZ_SECONDS=$(FUZZ_SECONDS) (clang, into build-fuzz/)"
	@echo "make fuzz-smoke  each fuzz target for a few seconds (part of make test)"
	@echo "make valgrind  C unit tests and CLI runs under valgrind memcheck"
	@echo "make mutate    every curated mutant (tests/mutate/*.patch): the mutation score and survivors"
	@echo "make mutate-sample  the fixed CI sample of those mutants (part of .ci/run)"
	@echo "make bench     the benchmark suite (bench/*.lua), writes bench/RESULTS.md"
	@echo "make install   PREFIX=$(PREFIX) DESTDIR=$(DESTDIR)"

deps:
	@bash tools/deps.sh

$(BUILD)/obj/%.o: core/%.c $(wildcard core/*.h) | $(BUILD)/obj
	$(CC) $(CFLAGS_ALL) -c $< -o $@

# eBPF programs (core/bpf/*.bpf.c): vmlinux.h from the running kernel's BTF, objects compiled by
# clang for the BPF target, skeleton headers from bpftool; core/bpf.c includes the skeleton.
$(BUILD)/vmlinux.h: | $(BUILD)/obj
	$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@.tmp && mv $@.tmp $@

$(BUILD)/bpf/%.bpf.o: core/bpf/%.bpf.c $(wildcard core/bpf/*.h) $(BUILD)/vmlinux.h | $(BUILD)/bpf
	$(BPF_CLANG) -O2 -g -target bpf -D__TARGET_ARCH_x86 -I$(BUILD) -Icore/bpf -c $< -o $@

$(BUILD)/%.skel.h: $(BUILD)/bpf/%.bpf.o
	$(BPFTOOL) gen skeleton $< name wb_$* > $@.tmp && mv $@.tmp $@

.PRECIOUS: $(BUILD)/bpf/%.bpf.o
$(BUILD)/obj/bpf.o: $(BUILD)/profile.skel.h $(wildcard core/bpf/*.h)
$(BUILD)/obj/bpf.o: CFLAGS_ALL += -Icore/bpf
$(BUILD)/obj/bpf_ustack.o $(BUILD)/obj/critpath.o $(BUILD)/obj/python.o $(BUILD)/obj/python_read.o: $(wildcard core/bpf/*.h)

$(BUILD)/embed: tools/embed.c | $(BUILD)/obj
	$(CC) -std=c11 -Wall -Wextra -Werror -O1 $(PKG_CFLAGS) $< $(PKG_LIBS) -o $@

$(BUILD)/embed_lua.c: $(BUILD)/embed $(LUA_SRC)
	$(BUILD)/embed $@ $(LUA_SRC)

$(BUILD)/obj/embed_lua.o: $(BUILD)/embed_lua.c
	$(CC) $(CFLAGS_ALL) -c $< -o $@

$(BUILD)/libwb.a: $(CORE_OBJ)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/libwb.so: $(CORE_OBJ)
	$(CC) -shared -Wl,-soname,libwb.so $(LDFLAGS) $(EXTRA_LDFLAGS) $^ $(LIBS) -o $@

$(BUILD)/wb: $(BUILD)/obj/main.o $(BUILD)/libwb.a
	$(CC) $(LDFLAGS) $(EXTRA_LDFLAGS) $< $(BUILD)/libwb.a $(BIN_LIBS) -o $@

$(BUILD)/tests/%: tests/c/%.c $(BUILD)/libwb.a core/wb.h | $(BUILD)/tests
	$(CC) $(CFLAGS_ALL) $< $(BUILD)/libwb.a $(LIBS) -o $@

# The allocation sampler wb.capture{alloc = true} preloads (shim/alloc.c): libc and libgcc_s only,
# thread-locals in the initial-exec model (it is loaded at start-up, never dlopened). Never built
# with the sanitizers of EXTRA_CFLAGS: it goes into programs that are not.
$(BUILD)/libwballoc.so: shim/alloc.c | $(BUILD)/obj
	$(CC) $(WARN) $(OPT) -fPIC -shared -fvisibility=hidden -ftls-model=initial-exec $< \
	  -o $@ -ldl -lm -lgcc_s -pthread

$(BUILD)/examples/%: examples/%.c | $(BUILD)/examples
	$(CC) -std=c11 -Wall -Wextra -Werror -O2 -g -fno-omit-frame-pointer $< -o $@ -lm -pthread

$(BUILD)/obj $(BUILD)/tests $(BUILD)/examples $(BUILD)/bpf:
	mkdir -p $@

demo: deps all
	@$(BUILD)/wb run recipes/profile_app_full.lua

tests-c: $(C_TESTS)

# As root `make test` installs what is missing first; without root it reports the missing packages
# and runs the rest, the suites that need them ending as skips with their reason (tests/run.sh
# lists them; with CI=true a skip tests/skips.allow does not accept fails the run).
test: deps-test all $(C_TESTS)
	@WB_BUILD=$(BUILD) bash tests/run.sh

# The flakiness hunt (tests/repeat.sh): the kinds of tests/run.sh in ONLY, N rounds, with LOAD
# CPU-bound loops running; `WB_TEST_LOAD=2 make test` runs the whole suite once that way.
N    ?= 5
LOAD ?= 0
ONLY ?= lua cli
test-repeat: deps-test all $(C_TESTS)
	@WB_BUILD=$(BUILD) N=$(N) LOAD=$(LOAD) ONLY="$(ONLY)" bash tests/repeat.sh

# The suites that measure time (wb's own figures: off-CPU seconds, splits, ratios, verdicts), run
# once more beside LOAD_HOGS CPU-bound loops: every one must hold on a busy machine (.ci/run).
LOAD_HOGS   ?= 2
LOAD_SUITES ?= tests/lua/proc_test.lua tests/lua/bench_test.lua tests/lua/campaign_test.lua \
	tests/lua/verdict_test.lua tests/lua/verdict_e2e_test.lua tests/lua/capture_test.lua tests/lua/unwind_test.lua \
	tests/recipes/tune_test.lua tests/lua/trend_test.lua tests/recipes/gate_test.lua
test-load: deps-test all
	@WB_BUILD=$(BUILD) WB_TEST_LOAD=$(LOAD_HOGS) WB_TEST_ONLY=lua WB_TEST_LUA="$(LOAD_SUITES)" bash tests/run.sh

# A/A under load (tests/aa/): the same work twice with hogs beside one side, then 10% more work
# planted; AA_PAIRS pairs each (default 10), each also judged by wb compare --confirm. About ten
# minutes; not part of make test.
aa: deps-test all
	@WB_BUILD=$(BUILD) WB_TEST_ONLY=lua WB_TEST_LUA="tests/aa/aa_test.lua" bash tests/run.sh

deps-test:
	@bash tools/deps.sh --test

asan:
	$(MAKE) BUILD=build-asan OPT="-O1 -g" \
	  EXTRA_CFLAGS="-fsanitize=address,undefined -fno-sanitize-recover=undefined" \
	  EXTRA_LDFLAGS="-fsanitize=address,undefined" test

# Fuzzing (tests/fuzz/): fuzz-build compiles libwb.a with clang, -fsanitize=fuzzer-no-link and
# ASan+UBSan into $(FUZZ_BUILD), then links the targets (tests/fuzz/fuzz.mk). Its JSON reader hands
# cJSON at most 48 bytes at once (core/json_read.c), so fuzz inputs take both of its ways. fuzz
# runs each target for FUZZ_SECONDS; fuzz-smoke runs each for a few seconds (tests/run.sh calls
# it). valgrind runs the C unit tests and a set of CLI runs under memcheck (tests/valgrind/run.sh).
FUZZ_BUILD   ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=undefined
.PHONY: fuzz fuzz-build fuzz-smoke valgrind

fuzz-build:
	@$(MAKE) --no-print-directory BUILD=$(FUZZ_BUILD) CC=clang OPT="-O1 -g" WARN="-std=c11 -Wall -Wextra" \
	  EXTRA_CFLAGS="-fsanitize=fuzzer-no-link $(FUZZ_SAN) -DWB_JSON_WINDOW=48" $(FUZZ_BUILD)/libwb.a
	@$(MAKE) --no-print-directory -f tests/fuzz/fuzz.mk FUZZ_BUILD=$(FUZZ_BUILD) LIBS="$(LIBS)" SAN="$(FUZZ_SAN)"

fuzz: fuzz-build
	@FUZZ_BUILD=$(FUZZ_BUILD) bash tests/fuzz/run.sh run $(FUZZ_SECONDS)

fuzz-smoke: fuzz-build
	@FUZZ_BUILD=$(FUZZ_BUILD) bash tests/fuzz/run.sh smoke

valgrind: all $(C_TESTS)
	@WB_BUILD=$(BUILD) bash tests/valgrind/run.sh

# Mutation testing (tests/mutate/run.sh): curated patches applied one at a time in a scratch git
# worktree, each mutant's suites run against it.
mutate: deps
	@bash tests/mutate/run.sh

mutate-sample: deps
	@bash tests/mutate/run.sh --sample

bench: all
	@bash tools/bench-deps.sh $(BUILD)/asv-venv
	@$(BUILD)/wb run bench/run.lua

bench-smoke: all
	@bash tools/bench-deps.sh $(BUILD)/asv-venv
	@$(BUILD)/wb run bench/run.lua size=smoke results=$(BUILD)/bench-smoke.md

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include/wb \
	  $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/share/wb/recipes \
	  $(DESTDIR)$(PREFIX)/share/wb/profiles $(DESTDIR)$(PREFIX)/share/man/man1 \
	  $(DESTDIR)$(PREFIX)/libexec/wb/examples
	install -m 755 $(BUILD)/wb $(DESTDIR)$(PREFIX)/bin/wb
	install -m 644 $(BUILD)/libwb.so $(BUILD)/libwb.a $(DESTDIR)$(PREFIX)/lib/
	install -m 644 core/wb.h core/wb_c.h $(DESTDIR)$(PREFIX)/include/wb/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(shell sed -n 's/.*WB_VERSION "\(.*\)"/\1/p' core/internal.h)|' \
	  tools/wb.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/wb.pc
	cp -R recipes/. $(DESTDIR)$(PREFIX)/share/wb/recipes/
	if [ -d profiles ]; then cp -R profiles/. $(DESTDIR)$(PREFIX)/share/wb/profiles/; fi
	install -m 644 docs/wb.1 $(DESTDIR)$(PREFIX)/share/man/man1/wb.1
	install -m 755 $(EXAMPLES) $(DESTDIR)$(PREFIX)/libexec/wb/examples/
	install -m 644 $(BUILD)/libwballoc.so $(DESTDIR)$(PREFIX)/libexec/wb/

clean:
	rm -rf build build-asan build-fuzz

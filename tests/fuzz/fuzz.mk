# Links the libFuzzer targets: each tests/fuzz/fuzz_<name>.c with the harness (tests/fuzz/fuzz_lua.c)
# and $(FUZZ_BUILD)/libwb.a into $(FUZZ_BUILD)/fuzz_<name>. The top Makefile's fuzz-build target
# first builds that libwb.a with its own rules (clang, -fsanitize=fuzzer-no-link plus $(SAN)), then
# runs this file with LIBS, so new core modules and generated files need no change here:
#   make fuzz-build          (or: make -f tests/fuzz/fuzz.mk FUZZ_BUILD=dir LIBS="..." SAN="...")
FUZZ_BUILD ?= build-fuzz
FUZZ_CC    ?= clang
SAN        ?= -fsanitize=address,undefined -fno-sanitize-recover=undefined
LIBS       ?= -llua5.4 -lyaml -lreadline -lz -lm
PKG_CFLAGS := $(shell pkg-config --cflags lua5.4 2>/dev/null || echo -I/usr/include/lua5.4)
FUZZ_FLAGS := -std=c11 -Wall -Wextra -Werror -O1 -g -fno-omit-frame-pointer $(PKG_CFLAGS) -iquote core \
              -Itests/fuzz -DFUZZ_LUA_DIR='"$(abspath tests/fuzz/lua)"'
TARGETS    := $(patsubst tests/fuzz/%.c,$(FUZZ_BUILD)/%, \
                $(filter-out tests/fuzz/fuzz_lua.c,$(sort $(wildcard tests/fuzz/fuzz_*.c))))

.PHONY: all
all: $(TARGETS)

$(FUZZ_BUILD)/fuzz_lua.o: tests/fuzz/fuzz_lua.c tests/fuzz/fuzz_lua.h core/internal.h
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link $(SAN) -c $< -o $@

$(FUZZ_BUILD)/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz_lua.h $(FUZZ_BUILD)/fuzz_lua.o \
                      $(FUZZ_BUILD)/libwb.a
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer $(SAN) $< $(MODEL) $(FUZZ_BUILD)/fuzz_lua.o \
	  $(FUZZ_BUILD)/libwb.a $(LIBS) -o $@

# fuzz_json compares wb's reader with the reference model of the parser wb had before cJSON.
$(FUZZ_BUILD)/fuzz_json: MODEL := tests/fuzz/json_ref.c
$(FUZZ_BUILD)/fuzz_json: tests/fuzz/json_ref.c tests/fuzz/json_ref.h

#!/usr/bin/env bash
# `make install` into a staging directory: the binary finds its installed recipes, profiles and
# bundled examples from anywhere (tests/cli/outside.t, run again with the installed copy), wb.pc
# works with pkg-config, and a C program builds and runs against the installed header + lib (its
# JSON reader through cJSON included).
set -u
cd "$(dirname "$0")/../.."
BUILD=${WB_BUILD:-build}
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
source tests/lib/check.sh

check "make install" make -s install BUILD="$BUILD" PREFIX=/opt/wb DESTDIR="$stage"
root="$stage/opt/wb"
check "installed files" test -x "$root/bin/wb" -a -f "$root/lib/libwb.so" -a -f "$root/lib/libwb.a" \
  -a -f "$root/include/wb/wb.h" -a -f "$root/include/wb/wb_c.h" -a -f "$root/lib/pkgconfig/wb.pc" \
  -a -f "$root/share/wb/recipes/demo.lua" -a -f "$root/share/man/man1/wb.1" \
  -a -x "$root/libexec/wb/examples/phases" -a -x "$root/libexec/wb/examples/gwas_engine"
check "installed wb lists installed recipes from another directory" \
  bash -c "cd / && '$root/bin/wb' list | grep -q '^    demo '"
check "the installed wb runs the demo with its defaults from /tmp" \
  bash -c "cd /tmp && '$root/bin/wb' demo | grep -q '^$root/libexec/wb/examples/phases --scale 4'"
# the first-hour transcript from temporary directories outside the repository; the failures only
check "tests/cli/outside.t with the installed copy" bash -c \
  "WB_BIN='$root/bin/wb' bash tests/cli/run.sh tests/cli/outside.t | grep -v '^ok'; exit \${PIPESTATUS[0]}"
# without its examples, the installed copy says so in one line (exit 2) and writes nothing
mv "$root/libexec/wb/examples" "$stage/examples.aside"
check "an installed copy without its examples: one line, exit 2, nothing written" bash -c \
  "cd '$stage' && '$root/bin/wb' profile_app_full > out.txt 2>&1; rc=\$?; test \$rc -eq 2 && test ! -e runs && \
   grep -q 'interpolation \${wb:examples}: the bundled examples are not installed' out.txt && test \$(wc -l < out.txt) -eq 1"
mv "$stage/examples.aside" "$root/libexec/wb/examples"
check "pkg-config reads wb.pc" bash -c \
  "PKG_CONFIG_PATH='$root/lib/pkgconfig' pkg-config --cflags --libs wb | grep -q -- '-I/opt/wb/include/wb'"
cat >"$stage/use.c" <<'C'
#include <wb_c.h>
#include <stdio.h>
#include <string.h>
int main(void) {
  const char *argv[] = {"true", NULL};
  char err[256];
  wb_child *c = wb_child_spawn(argv, NULL, NULL, NULL, 5, 1, err, sizeof err);
  if (!c) { fprintf(stderr, "%s\n", err); return 1; }
  wb_child_result r;
  if (wb_child_wait(c, &r) != 0 || !r.exited || r.exit_code != 0) return 1;
  wb_child_free(c);
  char *json = wb_json_reformat("{\"a\": [1, 2.5]}", 15, 0, err, sizeof err);
  if (!json || strcmp(json, "{\"a\":[1,2.5]}") != 0) return 1;
  wb_free(json);
  printf("%s %lld\n", wb_version(), (long long)(wb_clock_ns() > 0));
  return strcmp(wb_version(), "") == 0;
}
C
# An ASan build's libwb.so (make asan) loads only into a program linked with the ASan runtime.
san=
readelf -d "$root/lib/libwb.so" | grep -q 'NEEDED.*libasan' && san="-fsanitize=address,undefined"
check "a C program builds and runs against the installed library" bash -c \
  "cc -std=c11 -Wall -Werror $san -I'$root/include/wb' '$stage/use.c' -L'$root/lib' -lwb -o '$stage/use' && LD_LIBRARY_PATH='$root/lib' '$stage/use'"
finish

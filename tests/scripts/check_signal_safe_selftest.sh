#!/usr/bin/env bash
# check_signal_safe_selftest.sh SCRIPT CC: scripts/check-signal-safe.sh passes
# an object that calls only write/_exit and fails one that calls malloc or printf.
set -euo pipefail
script="$1" cc="$2"
dir=$(mktemp -d "${TMPDIR:-/tmp}/nftrace-test-sigsafe.XXXXXX")
trap 'rm -rf "$dir"' EXIT
cat >"$dir/good.c" <<'C'
#include <unistd.h>
void good(int fd);
void good(int fd) { if (write(fd, "x", 1) != 1) _exit(1); _exit(0); }
C
cat >"$dir/bad.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
void bad(void);
void bad(void) { char *p = malloc(8); printf("%p\n", (void *)p); free(p); }
C
"$cc" -c -O2 -o "$dir/good.o" "$dir/good.c"
"$cc" -c -O2 -o "$dir/bad.o" "$dir/bad.c"
bash "$script" "$dir/good.o" >/dev/null || { echo "FAIL: good.o was refused"; exit 1; }
if bash "$script" "$dir/bad.o" 2>"$dir/err"; then
	echo "FAIL: bad.o (malloc, printf, free) passed"
	exit 1
fi
grep -q "calls malloc" "$dir/err" || { echo "FAIL: no line names malloc:"; cat "$dir/err"; exit 1; }
grep -q "calls free" "$dir/err" || { echo "FAIL: no line names free:"; cat "$dir/err"; exit 1; }
echo "check-signal-safe self-test: ok"

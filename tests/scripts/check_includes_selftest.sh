#!/usr/bin/env bash
# check_includes_selftest.sh SCRIPT: scripts/check-includes.sh on small trees
# made here: it passes a tree whose includes go down the stages, and fails,
# naming the file, the line and the include, on an include going up (core
# including an analyzer header; a parser file including a viewer private
# header by a relative path) and on a public header no module owns.
set -u
script=$1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nftrace-test-incl.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
bad=0
fail() { echo "FAIL: $*"; bad=1; }

mk() { mkdir -p "$(dirname "$tmp/$1")"; printf '%s\n' "$2" > "$tmp/$1"; }
mk include/nftrace/error.h '/* core */'
mk include/nftrace/timeline.h '#include "nftrace/error.h"'
mk core/error.c '#include "nftrace/error.h"'
mk viewer/layout.h '#include <nftrace/timeline.h>'
mk parser/reader.c '#include "nftrace/error.h"'

mk build-asan/CMakeCache.txt '# a build tree: its C files are not checked'
mk build-asan/CMakeFiles/id.c '#include "../../include/nftrace/timeline.h"'
out=$(bash "$script" "$tmp" 2>&1) || fail "clean tree rejected: $out"

mk core/events.c $'#include <stdio.h>\n#include "nftrace/timeline.h"'
out=$(bash "$script" "$tmp" 2>&1) && fail "core -> analyzer accepted"
grep -q '^core/events.c:2: includes nftrace/timeline.h .*module analyzer, stage above module core' <<<"$out" ||
	fail "core -> analyzer not named: $out"
rm "$tmp/core/events.c"

mk parser/reader.c '#include "../viewer/layout.h"'
out=$(bash "$script" "$tmp" 2>&1) && fail "parser -> viewer accepted"
grep -q '^parser/reader.c:1: includes ../viewer/layout.h (viewer/layout.h, module viewer' <<<"$out" ||
	fail "parser -> viewer not named: $out"
mk parser/reader.c '#include "nftrace/error.h"'

mk include/nftrace/stray.h '/* no module */'
out=$(bash "$script" "$tmp" 2>&1) && fail "unowned public header accepted"
grep -q '^include/nftrace/stray.h: public header with no module' <<<"$out" || fail "stray header not named: $out"
rm "$tmp/include/nftrace/stray.h"

mk newmod/x.c '/* a module with no stage */'
out=$(bash "$script" "$tmp" 2>&1) && fail "folder with no stage accepted"
grep -q '^newmod/: C sources' <<<"$out" || fail "stageless folder not named: $out"

exit $bad

#!/usr/bin/env bash
# check_includes_selftest.sh SCRIPT: scripts/check-includes.sh on small trees
# made here: it passes a tree whose includes go down the stages, and fails,
# naming the file, the line and the include, on an include going up (core
# including an analyzer header; a parser file including a viewer private
# header by a relative path), on a public header no module owns, on an
# importer including another importer and on a reader including the writer.
set -u
script=$1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nftrace-test-incl.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
bad=0
fail() { echo "FAIL: $*"; bad=1; }

mk() { mkdir -p "$(dirname "$tmp/$1")"; printf '%s\n' "$2" > "$tmp/$1"; }
mk include/nftrace/error.h '/* core */'
mk include/contract/timeline.h '#include "nftrace/error.h"'
mk include/contract/timeline_writer.h '#include "nftrace/error.h"'
mk importers/importers.c $'#include "ctf/builder.h"\n#include "kernel/ingest.h"'
mk importers/ctf/builder.h '#include "contract/timeline_writer.h"'
mk importers/kernel/ingest.h '#include "contract/timeline_writer.h"'
mk export/export.c '#include "contract/timeline.h"'
mk core/error.c '#include "nftrace/error.h"'
mk viewer/layout.h '#include <contract/timeline.h>'
mk parser/reader.c '#include "nftrace/error.h"'

mk build-asan/CMakeCache.txt '# a build tree: its C files are not checked'
mk build-asan/CMakeFiles/id.c '#include "../../include/contract/timeline.h"'
out=$(bash "$script" "$tmp" 2>&1) || fail "clean tree rejected: $out"

mk core/events.c $'#include <stdio.h>\n#include "contract/timeline.h"'
out=$(bash "$script" "$tmp" 2>&1) && fail "core -> timeline accepted"
grep -q '^core/events.c:2: includes contract/timeline.h .*module timeline, stage above module core' <<<"$out" ||
	fail "core -> timeline not named: $out"
rm "$tmp/core/events.c"

mk parser/reader.c '#include "../viewer/layout.h"'
out=$(bash "$script" "$tmp" 2>&1) && fail "parser -> viewer accepted"
grep -q '^parser/reader.c:1: includes ../viewer/layout.h (viewer/layout.h, module viewer' <<<"$out" ||
	fail "parser -> viewer not named: $out"
mk parser/reader.c '#include "nftrace/error.h"'

mk importers/ctf/builder.h $'#include "contract/timeline_writer.h"\n#include "../kernel/ingest.h"'
out=$(bash "$script" "$tmp" 2>&1) && fail "importer -> importer accepted"
grep -q '^importers/ctf/builder.h:2: includes ../kernel/ingest.h (importers/kernel/ingest.h): importer importers/ctf includes importer importers/kernel' <<<"$out" ||
	fail "importer -> importer not named: $out"
mk importers/ctf/builder.h '#include "contract/timeline_writer.h"'

mk export/export.c $'#include "contract/timeline.h"\n#include "contract/timeline_writer.h"'
out=$(bash "$script" "$tmp" 2>&1) && fail "reader -> writer accepted"
grep -q '^export/export.c:2: includes contract/timeline_writer.h .*a reader includes only core and the timeline' <<<"$out" ||
	fail "reader -> writer not named: $out"
mk export/export.c $'#include "contract/timeline.h"\n#include "../importers/ctf/builder.h"'
out=$(bash "$script" "$tmp" 2>&1) && fail "reader -> importer accepted"
mk export/export.c '#include "contract/timeline.h"'

mk include/nftrace/stray.h '/* no module */'
out=$(bash "$script" "$tmp" 2>&1) && fail "unowned public header accepted"
grep -q '^include/nftrace/stray.h: public header with no module' <<<"$out" || fail "stray header not named: $out"
rm "$tmp/include/nftrace/stray.h"
mk include/contract/stray.h '/* no module */'
out=$(bash "$script" "$tmp" 2>&1) && fail "unowned contract header accepted"
rm "$tmp/include/contract/stray.h"

mk newmod/x.c '/* a module with no stage */'
out=$(bash "$script" "$tmp" 2>&1) && fail "folder with no stage accepted"
grep -q '^newmod/: C sources' <<<"$out" || fail "stageless folder not named: $out"

exit $bad

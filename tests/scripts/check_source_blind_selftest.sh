#!/usr/bin/env bash
# check_source_blind_selftest.sh SCRIPT: scripts/check-source-blind.sh on
# small trees made here: it passes readers whose words only look like source
# names ("string", "between", "Bring"), and fails, naming the file and the
# line, on each planted violation: a file name (viewer/kernel_rows.c), an
# identifier part (ETWRows, lg-vsync, NF_RB_DMA), a comment (GPU rings), the
# page's script (vblanks), and the dma_fence id base in a reader or in the
# views; the id base in the importers, the writer, its schema or tests passes.
set -u
script=$1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nftrace-test-blind.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
bad=0
fail() { echo "FAIL: $*"; bad=1; }
mk() { mkdir -p "$(dirname "$tmp/$1")"; printf '%s\n' "$2" > "$tmp/$1"; }

mk viewer/items.c $'#include <string.h>\n/* lanes and items, between the rows */\nstatic int bring_up(void);'
mk html/report.html $'<script>JSON.stringify(D.items); String(x);</script>'
mk export/items.c '/* Each item on its track (substrings: "during", "network"). */'
mk importers/kernel/ingest.c '#define BASE 4294967296LL'
mk include/contract/timeline_writer.h '#define NF_WRITER_CONTEXT_BASE 4294967296LL'
mk schemas/timeline.sql '-- numbered 4294967296 + context'
mk schemas/timeline-views.sql '-- views'
mk tests/kernel/test.c 'static long base = 4294967296;'
out=$(bash "$script" "$tmp" 2>&1) || fail "clean tree rejected: $out"

# plant fails DESCRIPTION PATTERN FILE CONTENT: FILE with CONTENT is refused, naming PATTERN
plant() {
	local what=$1 pattern=$2 file=$3 keep
	keep=$(cat "$tmp/$file" 2>/dev/null)
	mk "$file" "$4"
	out=$(bash "$script" "$tmp" 2>&1) && fail "$what accepted"
	grep -q -- "$pattern" <<<"$out" || fail "$what not named: $out"
	if [ -n "$keep" ]; then mk "$file" "$keep"; else rm -f "$tmp/$file"; fi
	out=$(bash "$script" "$tmp" 2>&1) || fail "tree not clean again after $what: $out"
}
plant "a file name" '^viewer/kernel_rows.c: file name names a source (kernel)' viewer/kernel_rows.c '/* rows */'
plant "an identifier part" '^viewer/items.c:1: names a source (etw)' viewer/items.c 'struct ETWRows;'
plant "an upper-case identifier" '^viewer/items.c:1: names a source (dma)' viewer/items.c 'NF_RB_DMA_EDGE,'
plant "a CSS id" '^html/report.html:2: names a source (vsync)' html/report.html $'<p>\n<span id="lg-vsync"></span>'
plant "a comment" '^export/items.c:1: names a source (rings)' export/items.c '/* GPU rings on top */'
plant "the page script" '^html/report.html:1: names a source (vblanks)' html/report.html 'var VBT = D.vblanks;'
plant "the id base in a reader" '^viewer/layout.c:1:.*4294967296.*outside the writer and the importers' viewer/layout.c \
	'static const char q[] = "SELECT 4294967296 + context FROM t";'
plant "the id base in the views" '^schemas/timeline-views.sql:1:.*outside the writer and the importers' schemas/timeline-views.sql \
	'CREATE VIEW v AS SELECT 4294967296 + context FROM t;'
out=$(bash "$script" "$tmp/nowhere" 2>&1) && fail "a tree without readers accepted"

[ "$bad" = 0 ] && echo "check-source-blind: refuses every planted source name and id base, passes the clean tree"
exit "$bad"

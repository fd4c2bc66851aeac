#!/usr/bin/env bash
# check-source-blind.sh [SOURCE_DIR]: the readers stay blind to where the data
# came from (issue 27). The viewer, the HTML page and the export read what
# only some sources write through the timeline's views (schemas/timeline-
# views.sql: lanes, items, item_links, queue_labels, threads, lost_events), so:
# - no word in viewer/, html/ or export/ (file names, identifiers, comments,
#   strings, the page's markup, style and script) names a source: etw, kernel,
#   ring, dma, vsync, vblank (and their plurals). Words are split at anything
#   not a letter and at camelCase humps, so "string" or "between" are words
#   of their own and pass, while "kernel_rows", "ETWRows" or "lg-vsync" fail;
# - the dma_fence id base 4294967296 is the writer's (include/contract/
#   timeline_writer.h, timeline/writer.c), used by the importers and documented
#   in schemas/timeline.sql: no other source file (.c, .h, .sql, .html) outside
#   tests/ holds it, so nothing decodes ids.
# Prints each violation as FILE:LINE: what, and exits 1 when there is one.
set -u
src=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$src" || exit 2
readers="viewer html export"
for d in $readers; do
	[ -d "$d" ] || { echo "$src/$d: no such folder (check-source-blind checks the readers)"; exit 2; }
done
out=$(find $readers -type f | LC_ALL=C sort | perl -e '
	my $words = qr/^(?:etw|kernels?|rings?|dma|vsyncs?|vblanks?)$/;
	sub bad { my @w; for my $t ($_[0] =~ /[A-Za-z]+/g) {
			for my $p (split /(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])/, $t) { push @w, lc $p if lc($p) =~ $words } }
		return @w; }
	while (my $f = <STDIN>) {
		chomp $f;
		print "$f: file name names a source (", join(", ", bad($f)), ")\n" if bad($f);
		open(my $fh, "<", $f) or next;
		while (my $l = <$fh>) {
			my @w = bad($l);
			print "$f:$.: names a source (", join(", ", @w), ")\n" if @w;
		}
	}')
base=$(find . -path ./tests -prune -o -path ./importers -prune -o -type d -name 'build*' -prune -o -path ./.git -prune -o \
	-type f \( -name '*.c' -o -name '*.h' -o -name '*.sql' -o -name '*.html' \) -print |
	LC_ALL=C sort | grep -vx -e './schemas/timeline\.sql' -e './include/contract/timeline_writer\.h' -e './timeline/writer\.c' |
	xargs -r grep -n 4294967296 /dev/null | sed 's|^\./||')
[ -n "$base" ] && base=$(sed 's/$/  (the dma_fence id base outside the writer and the importers)/' <<<"$base")
if [ -n "$out$base" ]; then
	[ -n "$out" ] && printf '%s\n' "$out"
	[ -n "$base" ] && printf '%s\n' "$base"
	exit 1
fi
echo "source-blind: viewer/, html/ and export/ name no source; 4294967296 only in the writer and the importers"

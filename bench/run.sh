#!/usr/bin/env bash
# Runs every benchmark stage and prints one table: our figure, the peer or limit
# measured in the same run, the ratio, the target and whether it is met.
#   bench/run.sh BUILD_DIR          (scripts/bench.sh builds Release and calls this)
# Environment: NFB_SCALES (default "1 10"), NFB_WORK (default out/bench),
# NFB_STAGES (default: every stage, in pipeline order).
set -euo pipefail
NFB_SOURCE="$(cd "$(dirname "$0")/.." && pwd)"
NFB_BUILD="$(cd "${1:?usage: bench/run.sh BUILD_DIR}" && pwd)"
NFB_NFTRACE="$NFB_BUILD/nftrace"
NFB_SCALES="${NFB_SCALES:-1 10}"
NFB_WORK="${NFB_WORK:-$NFB_SOURCE/out/bench}"
mkdir -p "$NFB_WORK"
NFB_WORK="$(cd "$NFB_WORK" && pwd)"
NFB_TABLE="$NFB_WORK/table.tsv"
: >"$NFB_TABLE"
export NFB_SOURCE NFB_BUILD NFB_NFTRACE NFB_SCALES NFB_WORK NFB_TABLE
. "$NFB_SOURCE/bench/lib.sh"

stages="${NFB_STAGES:-engine record parse analyze analysis frames render html kernel export diff etl etw push}"
for st in $stages; do
	if [ -f "$NFB_SOURCE/bench/$st/run.sh" ]; then
		echo "== stage $st" >&2
		. "$NFB_SOURCE/bench/$st/run.sh"
	else
		nfb_row "$st" - - - - - - - "no benchmark yet"
	fi
done

header=$'stage\tscale\tmetric\tours\tpeer or limit\tpeer\tratio\ttarget\tverdict'
{
	echo "$header"
	cat "$NFB_TABLE"
} | awk -F'\t' '
	{ for (i = 1; i <= NF; i++) { c[NR, i] = $i; if (length($i) > w[i]) w[i] = length($i) } n = NR; if (NF > nf) nf = NF }
	END {
		for (r = 1; r <= n; r++) {
			line = ""
			for (i = 1; i <= nf; i++) line = line sprintf("%-*s  ", w[i], c[r, i])
			sub(/ +$/, "", line); print line
			if (r == 1) { line = ""; for (i = 1; i <= nf; i++) { s = ""; for (k = 0; k < w[i]; k++) s = s "-"; line = line s "  " } sub(/ +$/, "", line); print line }
		}
	}'
{
	echo "| ${header//$'\t'/ | } |"
	echo "|---|---|---|---|---|---|---|---|---|"
	sed 's/\t/ | /g; s/^/| /; s/$/ |/' "$NFB_TABLE"
} >"$NFB_WORK/table.md"
echo "(markdown copy: $NFB_WORK/table.md; machine: $(nproc) cores, $(uname -r))" >&2

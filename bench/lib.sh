# Shared helpers for bench stages (sourced by bench/run.sh; stages are sourced
# after it, so they see these functions and variables):
#   NFB_BUILD   the Release build directory        NFB_WORK  scratch directory
#   NFB_NFTRACE the nftrace binary                  NFB_SCALES e.g. "1 10"
#   NFB_TABLE   the TSV table the stages append to
#
#   nfb_time VAR [-i IN] [-O OUT] -- CMD...   run CMD, set VAR_s (wall seconds),
#                                             VAR_kb (peak RSS KiB), VAR_rc
#   nfb_row STAGE SCALE METRIC OURS PEER_NAME PEER RATIO TARGET VERDICT
#                                             append one row to the table
#   nfb_div A B                               A / B with 3 significant digits
#   nfb_session SCALE [--ground-truth]        path of the stress session at SCALE
#                                             (recorded once, cached)
#   nfb_scenario SCALE                        path of the stress scenario at SCALE

nfb_time() {
	local var="$1"; shift
	local res="$NFB_WORK/.time.$$"
	local rc=0
	"$NFB_BUILD/bench/nfb_time" -o "$res" "$@" || rc=$?
	local s kb code
	read -r s kb code <"$res" || { s=0; kb=0; code=$rc; }
	rm -f "$res"
	printf -v "${var}_s" '%s' "$s"
	printf -v "${var}_kb" '%s' "$kb"
	printf -v "${var}_rc" '%s' "$code"
	return 0
}

nfb_div() {
	awk -v a="$1" -v b="$2" 'BEGIN { if (b == 0) print "n/a"; else printf "%.3g\n", a / b }'
}

nfb_row() {
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$NFB_TABLE"
}

nfb_scenario() {
	local scale="$1"
	local f="$NFB_WORK/stress-x$scale.nfs"
	if [ ! -f "$f" ]; then
		sed "s/^repeat 4000 as/repeat $((4000 * scale)) as/" \
			"$NFB_SOURCE/samples/stress.nfs" >"$f"
	fi
	echo "$f"
}

nfb_session() {
	local scale="$1" gt="${2:-}"
	local dir="$NFB_WORK/stress-x$scale${gt:+-gt}"
	if [ ! -f "$dir/metadata" ]; then
		"$NFB_NFTRACE" record --force ${gt:+--ground-truth} -o "$dir" \
			"$(nfb_scenario "$scale")" >/dev/null 2>"$NFB_WORK/record.err" || {
			cat "$NFB_WORK/record.err" >&2
			return 1
		}
	fi
	echo "$dir"
}

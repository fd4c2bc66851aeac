# Shared helpers for bench stages (sourced by bench/run.sh; stages are sourced
# after it, so they see these functions and variables):
#   NFB_BUILD   the Release build directory        NFB_WORK  scratch directory
#   NFB_NFTRACE the nftrace binary                  NFB_SCALES e.g. "1 10"
#   NFB_TABLE   the TSV table the stages append to
#
#   nfb_time VAR [-i IN] [-O OUT] [-w PATH] -- CMD...
#                                             run CMD, set VAR_s (wall seconds),
#                                             VAR_kb (peak RSS KiB), VAR_rc,
#                                             VAR_cpu (user+sys CPU seconds),
#                                             VAR_seen (seconds until PATH existed,
#                                             -1 never; without -w: VAR_s)
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
	local s kb code cpu seen
	read -r s kb code cpu seen <"$res" || { s=0; kb=0; code=$rc; cpu=0; seen=-1; }
	rm -f "$res"
	printf -v "${var}_seen" '%s' "${seen:--1}"
	printf -v "${var}_cpu" '%s' "${cpu:-0}"
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

# nfb_growth STAGE WHAT SCALE SECONDS: remembers SECONDS for STAGE/WHAT at SCALE
# and, from the second scale on, adds a row with how the time grew against how
# the operations grew (linear is a ratio of 1; the target allows 1.25).
declare -gA nfb_growth_prev_scale=() nfb_growth_prev_s=()
nfb_growth() {
	local stage="$1" what="$2" scale="$3" s="$4" key="$1/$2"
	local ps="${nfb_growth_prev_scale[$key]:-}" pt="${nfb_growth_prev_s[$key]:-}"
	nfb_growth_prev_scale[$key]=$scale
	nfb_growth_prev_s[$key]=$s
	[ -n "$ps" ] && [ -n "$pt" ] || return 0
	local f=$((scale / ps)) g verdict
	g=$(nfb_div "$s" "$pt")
	verdict=$(awk -v g="$g" -v f="$f" 'BEGIN { if (g == "n/a") print "n/a"; else if (g <= f * 1.25) print "meets (linear)"; else printf "misses: %.2fx worse than linear\n", g / f }')
	nfb_row "$stage" "x$scale" "$what time growth from x$ps (${f}x ops)" "$g" "linear" "$f" "$(nfb_div "$g" "$f")" "<=1.25x linear" "$verdict"
}

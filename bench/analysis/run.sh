# Analysis stage (sourced by bench/run.sh): on the stress session at each scale,
# the critical path of the last operation (what `nftrace critical-path` does:
# the lazy model, from opening the database to the path), and the hang check
# and the stall blame (each with the model's load from the database), next to
# the analyzer's build of the same session's timeline in the same run.
# Targets (docs/PERFORMANCE.md): critical path under 1 s at x10; hang check and stall
# blame at >= 1M operations/s.

nfb_as_out="$NFB_WORK/analysis"
mkdir -p "$nfb_as_out"
for scale in $NFB_SCALES; do
	dir="$(nfb_session "$scale")" || { nfb_row analysis "x$scale" "critical path" - - - - - "recording the session failed"; continue; }
	# the analyzer's build of this session, timed here (the peer of every row)
	rm -f "$dir/.timeline.db"
	nfb_time asbuild -- "$NFB_NFTRACE" query "$dir" "select 1"
	nfb_time as -O "$nfb_as_out/out" -- "$NFB_BUILD/bench/analysis/nfb_analysis" "$dir/.timeline.db"
	if [ "$as_rc" != 0 ] || [ "$asbuild_rc" != 0 ]; then
		nfb_row analysis "x$scale" "critical path" - - - - - "failed (exit $as_rc / build $asbuild_rc)"
		continue
	fi
	read -r ops load hangs blame path segs findings rows load_cpu hangs_cpu blame_cpu path_cpu <"$nfb_as_out/out"
	as_mb="$(awk -v k="$as_kb" 'BEGIN { printf "%.0f", k / 1024 }')"
	nfb_row analysis "x$scale" "driver peak memory MB (the loaded model of the blame)" "$as_mb" "-" "-" "-" "-" "reported"
	# check's memory (the hang check's model of open operations, with the log check)
	nfb_time ascheck -- "$NFB_NFTRACE" check "$dir"
	nfb_row analysis "x$scale" "nftrace check peak memory MB (${ascheck_s}s)" \
		"$(awk -v k="$ascheck_kb" 'BEGIN { printf "%.1f", k / 1024 }')" "-" "-" "-" "flat across scales" "reported"
	# the CLI end to end too (timeline already built)
	nfb_time ascli -- "$NFB_NFTRACE" critical-path "$dir"
	nfb_row analysis "x$scale" "critical path of the last op s ($segs segments; CLI ${ascli_s}s)" "$path" \
		"analyzer build s" "$asbuild_s" "$(nfb_div "$path" "$asbuild_s")" "<1 s" \
		"$(awk -v p="$ascli_s" 'BEGIN { print p < 1 ? "meets" : "misses" }')"
	for what in hangs blame; do
		# hang check: its one pass over the operations + the check; blame: load + blame
		if [ "$what" = hangs ]; then l=$load; lc=$load_cpu; t=$hangs; c=$hangs_cpu; name="hang check"; extra="$findings findings"
		else l=0; lc=0; t=$blame; c=$blame_cpu; name="stall blame"; extra="$rows rows"; fi
		rate="$(awk -v n="$ops" -v a="$l" -v b="$t" 'BEGIN { printf "%.0f", n / (a + b) }')"
		rate_cpu="$(awk -v n="$ops" -v a="$lc" -v b="$c" 'BEGIN { printf "%.0f", n / (a + b) }')"
		build_rate="$(awk -v n="$ops" -v s="$asbuild_s" 'BEGIN { printf "%.0f", n / s }')"
		nfb_row analysis "x$scale" "$name ops/s incl. load ($ops ops, ${l}s + ${t}s; CPU ${rate_cpu}/s; $extra)" \
			"$rate" "analyzer build ops/s" "$build_rate" "$(nfb_div "$rate" "$build_rate")" ">=1M/s" \
			"$(awk -v r="$rate" -v rc="$rate_cpu" 'BEGIN {
				if (r >= 1000000) print "meets"
				else if (rc >= 1000000) print "meets on CPU time (wall " r "/s on a shared machine)"
				else print "misses: loading the operations from SQLite is most of it" }')"
	done
done

# ETL decode stage (sourced by bench/run.sh): etl/'s reader alone — every
# record of a Windows ETW capture read in time order (the per-CPU buffers
# merged by timestamp) and every DxgKrnl record decoded by the table — in
# events per second next to reading the file (`cat`) in the same run, with
# peak memory and how time and memory grow. x1 is the real gpuvis capture when
# ../shared is there, x10 and x100 the synthetic capture of the etw stage
# (bench/etw/etw_make.c, cached in NFB_WORK). NFB_ETW_SCALES as in that stage.

for scale in ${NFB_ETW_SCALES:-1 10}; do
	etl="$NFB_WORK/etw-x$scale.etl"
	real="$NFB_SOURCE/../shared/real-traces/gpuvis-windows.etl"
	what="synthetic"
	if [ "$scale" = 1 ] && [ -f "$real" ]; then
		etl="$real"
		what="gpuvis capture"
	elif [ ! -f "$etl" ]; then
		"$NFB_BUILD/bench/etw/nfb_etw_make" "$etl" "$scale" >/dev/null || continue
	fi
	# Warm the page cache, then the peer and ours in the same run.
	cat "$etl" >/dev/null
	nfb_time cat -O /dev/null -- cat "$etl"
	nfb_time dec -O "$NFB_WORK/etl-decode.out" -- "$NFB_BUILD/bench/etl/nfb_etl_decode" "$etl"
	read -r _ events _ dxg _ decoded _ mism <"$NFB_WORK/etl-decode.out" || { events=0; mism=0; }
	rm -f "$NFB_WORK/etl-decode.out"
	rate="$(awk -v n="$events" -v s="$dec_s" 'BEGIN { printf "%.0f", (s > 0 ? n / s : 0) }')"
	cat_rate="$(awk -v n="$events" -v s="$cat_s" 'BEGIN { printf "%.0f", (s > 0 ? n / s : 0) }')"
	nfb_row etl "x$scale" "decode events/s ($what, $events events, $decoded DxgKrnl decoded, $mism mismatches, ${dec_s}s)" \
		"$rate" "cat of the file events/s (${cat_s}s)" "$cat_rate" "$(nfb_div "$dec_s" "$cat_s") (time)" \
		">=2M events/s" "$(awk -v r="$rate" -v rc="$dec_rc" 'BEGIN {
			if (rc != 0) print "failed (exit " rc ")"; else if (r >= 2000000) print "meets"
			else printf "misses: %.2gM events/s\n", r / 1e6 }')"
	# CPU seconds (user + system): steadier than wall time on a shared machine.
	dec_cpu="$( { TIMEFORMAT='%3U %3S'; time "$NFB_BUILD/bench/etl/nfb_etl_decode" "$etl" >/dev/null 2>&1; } 2>&1 |
		awk '{ print $1 + $2 }')"
	cat_cpu="$( { TIMEFORMAT='%3U %3S'; time cat "$etl" >/dev/null 2>&1; } 2>&1 | awk '{ print $1 + $2 }')"
	crate="$(awk -v n="$events" -v s="$dec_cpu" 'BEGIN { printf "%.0f", (s > 0 ? n / s : 0) }')"
	nfb_row etl "x$scale" "decode events per CPU s (user+sys ${dec_cpu}s)" "$crate" \
		"cat of the file CPU s" "$cat_cpu" "$(nfb_div "$dec_cpu" "$cat_cpu") (CPU)" ">=2M events/s" \
		"$(awk -v r="$crate" 'BEGIN { if (r >= 2000000) print "meets"; else printf "misses: %.2gM events/s\n", r / 1e6 }')"
	mb="$(awk -v k="$dec_kb" 'BEGIN { printf "%.1f", k / 1024 }')"
	nfb_row etl "x$scale" "decode peak memory MB" "$mb" "limit" 256 "$(nfb_div "$mb" 256)" "<256 MB, flat" \
		"$(awk -v m="$mb" 'BEGIN { print m < 256 ? "meets" : "misses: over 256 MB" }')"
	if [ "$what" = synthetic ]; then
		nfb_growth etl "decode (wall)" "$scale" "$dec_s"
	fi
done

# ETW import stage (sourced by bench/run.sh): `nftrace import` of a Windows ETW
# capture end to end (read, decode, match, every timeline table with every
# DxgKrnl payload field (dxgkrnl_events), indexes and deps), in events per
# second, next to reading the file (cat) and a bare SQLite insert of as many
# rows as the import wrote, in the same run; peak memory;
# and how the time grows. x1 is the real gpuvis capture when ../shared is
# there (else the synthetic one), x10 and x100 the synthetic capture written
# by nfb_etw_make (bench/etw/etw_make.c) at 10 and 100 times its size.
# NFB_ETW_SCALES (default "1 10") picks the scales; "1 10 100" needs ~2.5 GB.

nfb_etw_rows() { # rows the import wrote into the timeline's tables
	"$NFB_NFTRACE" query --csv "$1" "SELECT (SELECT count(*) FROM etw_events) +
	  (SELECT count(*) FROM fence_ops) + (SELECT count(*) FROM deps) +
	  (SELECT count(*) FROM queue_packets) + (SELECT count(*) FROM dma_packets) +
	  (SELECT count(*) FROM cpu_waits) + (SELECT count(*) FROM cpu_signals) +
	  (SELECT count(*) FROM vsyncs) + (SELECT count(*) FROM queues) +
	  (SELECT count(*) FROM fences) + (SELECT count(*) FROM etw_counts) +
	  (SELECT count(*) FROM dxgkrnl_events) + (SELECT count(*) FROM etw_gpu_ops)" | tail -n 1
}

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
	events="$("$NFB_NFTRACE" import "$etl" -o "$NFB_WORK/etw-probe" --force | sed -n 's/.*: \([0-9]*\) ETW events.*/\1/p')"
	rows="$(nfb_etw_rows "$NFB_WORK/etw-probe")"
	rm -rf "$NFB_WORK/etw-probe"
	# cat: the file read once (page cache warm after the probe import).
	nfb_time cat -O /dev/null -- cat "$etl"
	nfb_time imp -- "$NFB_NFTRACE" import "$etl" -o "$NFB_WORK/etw-s" --force
	nfb_time bare -O "$NFB_WORK/bare.out" -- "$NFB_BUILD/bench/analyze/nfb_bare_insert" \
		"$NFB_WORK/etw-bare.db" "$rows"
	rm -f "$NFB_WORK/etw-bare.db"
	read -r _ bare_load _ bare_cpu _ <"$NFB_WORK/bare.out" || { bare_load=0; bare_cpu=0; }
	# CPU seconds (user + system): steadier than wall time on a shared machine.
	imp_cpu="$( { TIMEFORMAT='%3U %3S'; time "$NFB_NFTRACE" import "$etl" -o "$NFB_WORK/etw-s" --force \
		>/dev/null 2>&1; } 2>&1 | awk '{ print $1 + $2 }')"
	rate="$(awk -v n="$events" -v s="$imp_s" 'BEGIN { printf "%.0f", (s > 0 ? n / s : 0) }')"
	cat_rate="$(awk -v n="$events" -v s="$cat_s" 'BEGIN { printf "%.0f", (s > 0 ? n / s : 0) }')"
	nfb_row etw "x$scale" "import events/s ($what, $events events, ${imp_s}s)" "$rate" \
		"cat of the file events/s (${cat_s}s)" "$cat_rate" "$(nfb_div "$cat_s" "$imp_s")" "-" \
		"$([ "$imp_rc" = 0 ] && echo "context" || echo "failed (exit $imp_rc)")"
	nfb_row etw "x$scale" "import wall s ($rows rows)" "$imp_s" "bare insert of $rows rows s" "$bare_load" \
		"$(nfb_div "$imp_s" "$bare_load")" "<=2x bare" "$(awk -v a="$imp_s" -v b="$bare_load" 'BEGIN {
			if (b <= 0) print "n/a"; else if (a <= 2 * b) print "meets"
			else printf "misses: %.2gx the bare insert\n", a / b }')"
	nfb_row etw "x$scale" "import CPU s (user+sys)" "$imp_cpu" "bare insert CPU s" "$bare_cpu" \
		"$(nfb_div "$imp_cpu" "$bare_cpu")" "<=2x bare" "$(awk -v a="$imp_cpu" -v b="$bare_cpu" 'BEGIN {
			if (b <= 0) print "n/a"; else if (a <= 2 * b) print "meets"
			else printf "misses: %.2gx the bare insert\n", a / b }')"
	mb="$(awk -v k="$imp_kb" 'BEGIN { printf "%.0f", k / 1024 }')"
	nfb_row etw "x$scale" "import peak memory MB" "$mb" "limit" 256 "$(nfb_div "$mb" 256)" "<256 MB" \
		"$(awk -v m="$mb" 'BEGIN { print m < 256 ? "meets" : "misses: over 256 MB" }')"
	if [ "$what" = synthetic ]; then
		nfb_growth etw "import (wall)" "$scale" "$imp_s"
		nfb_growth etw "import (CPU)" "$scale" "$imp_cpu"
	fi
	rm -rf "$NFB_WORK/etw-s"
done

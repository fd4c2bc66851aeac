# Kernel stage (sourced by bench/run.sh): `nftrace import` of a dma_fence +
# sched_switch trace.dat (written by tests/kernel's nf-make-tracedat from this
# kernel's format files, 100k fences x scale), next to `trace-cmd report` of
# the same file (the peer: libtracecmd + libtraceevent decoding and printing
# every event) in the same run; then the timeline build of the imported
# session (fence_ops, deps, cpu_runs) next to reading the session alone.

nfb_k_make() { # SCALE -> path of the trace.dat (made once, cached)
	local scale="$1" dat="$NFB_WORK/kernel-x$1.dat"
	if [ ! -f "$dat" ]; then
		awk -v n=$((100000 * scale)) 'BEGIN {
			t = 5000000000
			for (i = 1; i <= n; i++) {
				ctx = 1 + i % 4; t += 1000
				printf "0 %d dma_fence:dma_fence_emit 100 driver=nfgpu timeline=ring%d context=%d seqno=%d\n", t, ctx, ctx, i
				printf "0 %d sched:sched_switch 100 prev_comm=render prev_pid=100 prev_prio=120 prev_state=1 next_comm=waiter next_pid=200 next_prio=120\n", t + 100
				printf "0 %d dma_fence:dma_fence_wait_start 200 driver=nfgpu timeline=ring%d context=%d seqno=%d\n", t + 200, ctx, ctx, i
				printf "1 %d dma_fence:dma_fence_signaled 0 driver=nfgpu timeline=ring%d context=%d seqno=%d\n", t + 600, ctx, ctx, i
				printf "0 %d dma_fence:dma_fence_wait_end 200 driver=nfgpu timeline=ring%d context=%d seqno=%d\n", t + 700, ctx, ctx, i
				printf "0 %d sched:sched_switch 200 prev_comm=waiter prev_pid=200 prev_prio=120 prev_state=1 next_comm=render next_pid=100 next_prio=120\n", t + 800
			}
		}' >"$NFB_WORK/kernel-x$scale.events"
		"$NFB_BUILD/tests/kernel/nf-make-tracedat" "$NFB_SOURCE/samples/kernel/formats" \
			"$NFB_WORK/kernel-x$scale.events" "$dat" || return 1
		rm -f "$NFB_WORK/kernel-x$scale.events"
	fi
	echo "$dat"
}

if [ ! -x "$NFB_BUILD/tests/kernel/nf-make-tracedat" ] || ! command -v trace-cmd >/dev/null; then
	nfb_row kernel - "import" - "trace-cmd report" - - - "skipped: needs nf-make-tracedat and trace-cmd"
else
	for scale in $NFB_SCALES; do
		dat="$(nfb_k_make "$scale")" || continue
		n=$((600000 * scale))
		nfb_time imp -- "$NFB_NFTRACE" import --force "$dat" -o "$NFB_WORK/kernel-x$scale"
		nfb_time tcr -O /dev/null -- trace-cmd report "$dat"
		ours="$(awk -v n="$n" -v s="$imp_s" 'BEGIN { printf "%.0f", (s > 0 ? n / s : 0) }')"
		peer="$(awk -v n="$n" -v s="$tcr_s" 'BEGIN { printf "%.0f", (s > 0 ? n / s : 0) }')"
		ratio="$(nfb_div "$imp_s" "$tcr_s")"
		verdict="$(awk -v q="$ratio" -v rc="$imp_rc" 'BEGIN {
			if (rc != 0) { print "failed (exit " rc ")"; exit }
			print q <= 1.5 ? "meets" : sprintf("misses by %.2gx: the CTF write and the interning of every string", q / 1.5)
		}')"
		nfb_row kernel "x$scale" "import events/s ($n events, ${imp_s}s)" "$ours" \
			"trace-cmd report events/s (${tcr_s}s)" "$peer" "$ratio (time)" "<=1.5x trace-cmd report" "$verdict"
		nfb_growth kernel "import (wall)" "$scale" "$imp_s"
		# The timeline build against reading the session alone (babeltrace2, the
		# floor of any build): `nftrace info` parses every event and stores nothing.
		nfb_time kp -O /dev/null -- "$NFB_NFTRACE" info "$NFB_WORK/kernel-x$scale"
		rm -f "$NFB_WORK/kernel-x$scale/.timeline.db"
		nfb_time kq -O /dev/null -- "$NFB_NFTRACE" query "$NFB_WORK/kernel-x$scale" "select count(*) from deps"
		rate="$(awk -v n="$n" -v s="$kq_s" 'BEGIN { printf "%.0f", (s > 0 ? n / s : 0) }')"
		prate="$(awk -v n="$n" -v s="$kp_s" 'BEGIN { printf "%.0f", (s > 0 ? n / s : 0) }')"
		nfb_row kernel "x$scale" "timeline build events/s (${kq_s}s, ${kq_kb} KiB)" "$rate" \
			"session read alone (info) events/s (${kp_s}s)" "$prate" "$(nfb_div "$kq_s" "$kp_s") (time)" \
			"<=3x the read" \
			"$(awk -v a="$kq_s" -v b="$kp_s" -v rc="$kq_rc" 'BEGIN { if (rc != 0) print "failed (exit " rc ")"; else print a <= 3 * b ? "meets" : sprintf("misses by %.2gx: every fence, wait and run is a SQLite row, then fence_ops, cpu_waits and deps are written from a join", a / (3 * b)) }')"
		nfb_growth kernel "timeline build (wall)" "$scale" "$kq_s"
	done
fi

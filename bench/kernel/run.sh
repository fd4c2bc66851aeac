# Kernel stage (sourced by bench/run.sh): `nftrace import` of a dma_fence +
# sched_switch trace.dat (written by tests/kernel's nf-make-tracedat from this
# kernel's format files, 100k fences x scale), next to `trace-cmd report` of
# the same file (the peer: libtracecmd + libtraceevent decoding and printing
# every event) in the same run; then the timeline build of the imported
# session (fence_ops, deps, cpu_runs) next to reading the session alone.

# Times are printed with %.0f: mawk (Debian's awk) clamps %d to 2^31 - 1, which made
# every event of these captures share one timestamp until 2026-11-24 (their .dat files
# are named -v2 so caches made before are not reused).
nfb_k_make() { # SCALE -> path of the trace.dat (made once, cached)
	local scale="$1" dat="$NFB_WORK/kernel-v2-x$1.dat"
	if [ ! -f "$dat" ]; then
		awk -v n=$((100000 * scale)) 'BEGIN {
			t = 5000000000
			for (i = 1; i <= n; i++) {
				ctx = 1 + i % 4; t += 1000
				printf "0 %.0f dma_fence:dma_fence_emit 100 driver=nfgpu timeline=ring%d context=%d seqno=%d\n", t, ctx, ctx, i
				printf "0 %.0f sched:sched_switch 100 prev_comm=render prev_pid=100 prev_prio=120 prev_state=1 next_comm=waiter next_pid=200 next_prio=120\n", t + 100
				printf "0 %.0f dma_fence:dma_fence_wait_start 200 driver=nfgpu timeline=ring%d context=%d seqno=%d\n", t + 200, ctx, ctx, i
				printf "1 %.0f dma_fence:dma_fence_signaled 0 driver=nfgpu timeline=ring%d context=%d seqno=%d\n", t + 600, ctx, ctx, i
				printf "0 %.0f dma_fence:dma_fence_wait_end 200 driver=nfgpu timeline=ring%d context=%d seqno=%d\n", t + 700, ctx, ctx, i
				printf "0 %.0f sched:sched_switch 200 prev_comm=waiter prev_pid=200 prev_prio=120 prev_state=1 next_comm=render next_pid=100 next_prio=120\n", t + 800
			}
		}' >"$NFB_WORK/kernel-x$scale.events"
		"$NFB_BUILD/tests/kernel/nf-make-tracedat" "$NFB_SOURCE/samples/kernel/formats" \
			"$NFB_WORK/kernel-x$scale.events" "$dat" || return 1
		rm -f "$NFB_WORK/kernel-x$scale.events"
	fi
	echo "$dat"
}

# The timeline build of SESSION next to reading it alone (`nftrace info` parses every
# event and stores nothing: the floor of any build), three tries each, interleaved, the
# best wall and the best CPU (user+sys, nfb_time's VAR_cpu) of each kept: on a loaded machine
# the wall ratio swings with the neighbours, the CPU ratio much less. Prints one row with
# both ratios; the target (<= 3x the read) is judged on each.
nfb_k_build_row() { # LABEL SESSION EVENTS QUERY WHY_IT_MISSES
	local label="$1" ses="$2" n="$3" q="$4" why="$5" i bw="" bc="" rw="" rc_="" kb=0 rc=0
	for i in 1 2 3; do
		nfb_time kr -O /dev/null -- "$NFB_NFTRACE" info "$ses"
		rw="$(awk -v a="$rw" -v b="$kr_s" 'BEGIN { print (a == "" || b < a) ? b : a }')"
		rc_="$(awk -v a="$rc_" -v b="$kr_cpu" 'BEGIN { print (a == "" || b < a) ? b : a }')"
		rm -f "$ses/.timeline.db"
		nfb_time kb_ -O /dev/null -- "$NFB_NFTRACE" query "$ses" "$q"
		[ "$kb__rc" != 0 ] && rc="$kb__rc"
		kb="$kb__kb"
		bw="$(awk -v a="$bw" -v b="$kb__s" 'BEGIN { print (a == "" || b < a) ? b : a }')"
		bc="$(awk -v a="$bc" -v b="$kb__cpu" 'BEGIN { print (a == "" || b < a) ? b : a }')"
	done
	gq_s="$bw"
	local wr cr
	wr="$(nfb_div "$bw" "$rw")"
	cr="$(nfb_div "$bc" "$rc_")"
	nfb_row kernel "$label" "timeline build events/s (wall ${bw}s, cpu ${bc}s, ${kb} KiB)" \
		"$(awk -v n="$n" -v s="$bw" 'BEGIN { printf "%.0f", (s > 0 ? n / s : 0) }')" \
		"session read alone (info) events/s (wall ${rw}s, cpu ${rc_}s)" \
		"$(awk -v n="$n" -v s="$rw" 'BEGIN { printf "%.0f", (s > 0 ? n / s : 0) }')" \
		"${wr} (wall), ${cr} (cpu)" "<=3x the read" \
		"$(awk -v w="$wr" -v c="$cr" -v rc="$rc" -v why="$why" 'BEGIN {
			if (rc != 0) { print "failed (exit " rc ")"; exit }
			if (w <= 3 && c <= 3) print "meets"
			else if (c <= 3) printf "meets in CPU time (%.2gx); misses in wall time (%.2gx) on this loaded machine\n", c, w
			else printf "misses by %.3gx in CPU time (%.3gx wall): %s\n", c / 3, w, why }')"
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
		nfb_k_build_row "x$scale" "$NFB_WORK/kernel-x$scale" "$n" "select count(*) from deps" \
			"every dma_fence signal and wait is a fence_ops row, every wait a cpu_waits and a deps row too: 400k SQLite rows per 100k fences, already one bulk load per table (see docs/performance-history.md)"
		kq_s="$gq_s"
		nfb_growth kernel "timeline build (wall)" "$scale" "$kq_s"
	done
fi

# ---- GPU captures: the real amdgpu capture, and generated ones like it ----
# The real capture (../shared/real-traces/gpuvis-amdgpu.dat, 53507 events, never
# copied into the project): import next to `trace-cmd report` of a corrected
# copy (option 8 renumbered, made here in NFB_WORK; trace-cmd 3.1 refuses the
# original), then the timeline build (jobs, fences, runs, markers, vblanks)
# next to reading the session alone. Then generated captures with the same mix
# per 11.1 ms frame (two amdgpu jobs through the GPU scheduler with their
# fences, a vblank, a marker, 140 context switches: 49296 events per 316
# frames), 10x and 100x as large (NFB_GPU_SCALES), from the formats in
# samples/kernel/formats-drm-sched.
nfb_k_gpu_row() { # LABEL DAT SESSION EVENTS
	local label="$1" dat="$2" ses="$3" n="$4" tdat="$2"
	if [ "$label" = real ]; then
		# The corrected copy trace-cmd can read: the id of the first option (8) -> 0x7ff0.
		tdat="$NFB_WORK/gpuvis-amdgpu-corrected.dat"
		cp "$dat" "$tdat"
		local off
		off=$(grep -obUaP 'options  \x00' "$tdat" | head -1 | cut -d: -f1)
		printf '\xf0\x7f' | dd of="$tdat" bs=1 seek=$((off + 10)) conv=notrunc status=none
	fi
	nfb_time gi -- "$NFB_NFTRACE" import --force "$dat" -o "$ses"
	nfb_time gt -O /dev/null -- trace-cmd report "$tdat"
	[ "$tdat" != "$dat" ] && rm -f "$tdat"
	nfb_row kernel "$label" "import events/s ($n events, ${gi_s}s)" \
		"$(awk -v n="$n" -v s="$gi_s" 'BEGIN { printf "%.0f", (s > 0 ? n / s : 0) }')" \
		"trace-cmd report events/s (${gt_s}s)" \
		"$(awk -v n="$n" -v s="$gt_s" 'BEGIN { printf "%.0f", (s > 0 ? n / s : 0) }')" \
		"$(nfb_div "$gi_s" "$gt_s") (time)" "<=1.5x trace-cmd report" \
		"$(awk -v q="$(nfb_div "$gi_s" "$gt_s")" -v rc="$gi_rc" 'BEGIN { if (rc != 0) print "failed (exit " rc ")"; else print q <= 1.5 ? "meets" : "misses" }')"
	nfb_k_build_row "$label" "$ses" "$n" "select count(*) from jobs" \
		"see docs/performance-history.md"
}

nfb_k_gpu_make() { # SCALE -> path of a generated GPU capture (made once, cached)
	local scale="$1" dat="$NFB_WORK/gpu-v2-x$1.dat"
	if [ ! -f "$dat" ]; then
		awk -v frames=$((316 * scale)) 'BEGIN {
			t = 5000000000; job = 0; s0 = 0
			for (f = 1; f <= frames; f++) {
				t += 11100000
				printf "0 %.0f ftrace:print 500 ip=0xffffffff81234567 buf=frame_%d\n", t, f
				for (j = 0; j < 2; j++) {
					job++; s0++
					a = t + 1000 + j * 400000
					printf "0 %.0f amdgpu:amdgpu_cs_ioctl 500 sched_job_id=%d timeline=gfx context=301 seqno=%d fence=0xffff888100%06d ring=gfx num_ibs=1\n", a, job, s0, job % 4096
					printf "0 %.0f gpu_scheduler:drm_sched_job 500 entity=0xffff888200000000 fence=0xffff888100%06d name=gfx id=%d job_count=1 hw_job_count=0\n", a + 1000, job % 4096, job
					printf "1 %.0f gpu_scheduler:drm_run_job 200 entity=0xffff888200000000 fence=0xffff888100%06d name=gfx id=%d job_count=0 hw_job_count=1\n", a + 50000, job % 4096, job
					printf "1 %.0f amdgpu:amdgpu_sched_run_job 200 sched_job_id=%d timeline=gfx context=301 seqno=%d ring=gfx num_ibs=1\n", a + 50000, job, s0
					printf "1 %.0f dma_fence:dma_fence_signaled 200 driver=drm_sched timeline=gfx context=300 seqno=%d\n", a + 51000, s0
					printf "1 %.0f gpu_scheduler:drm_sched_process_job 0 fence=0xffff888100%06d\n", a + 350000, job % 4096
					printf "1 %.0f dma_fence:dma_fence_signaled 0 driver=drm_sched timeline=gfx context=301 seqno=%d\n", a + 351000, s0
				}
				printf "1 %.0f drm:drm_vblank_event 0 crtc=0 seq=%d time=%.0f high_prec=1\n", t + 900000, f, t + 900000
				for (k = 0; k < 70; k++) {
					c = t + 1000000 + k * 100000
					printf "0 %.0f sched:sched_switch 500 prev_comm=app prev_pid=500 prev_prio=120 prev_state=1 next_comm=worker next_pid=%d next_prio=120\n", c, 600 + k % 40
					printf "0 %.0f sched:sched_switch %d prev_comm=worker prev_pid=%d prev_prio=120 prev_state=1 next_comm=app next_pid=500 next_prio=120\n", c + 50000, 600 + k % 40, 600 + k % 40
				}
			}
		}' >"$NFB_WORK/gpu-x$scale.events"
		"$NFB_BUILD/tests/kernel/nf-make-tracedat" "$NFB_SOURCE/samples/kernel/formats-drm-sched" \
			"$NFB_WORK/gpu-x$scale.events" "$dat" || return 1
		rm -f "$NFB_WORK/gpu-x$scale.events"
	fi
	echo "$dat"
}

if [ -x "$NFB_BUILD/tests/kernel/nf-make-tracedat" ] && command -v trace-cmd >/dev/null; then
	real="$NFB_SOURCE/../shared/real-traces/gpuvis-amdgpu.dat"
	if [ -f "$real" ]; then
		nfb_k_gpu_row real "$real" "$NFB_WORK/gpu-real" 53507
	else
		nfb_row kernel real "import, timeline build" - - - - - "skipped: $real is absent"
	fi
	for scale in ${NFB_GPU_SCALES:-1 10 100}; do
		dat="$(nfb_k_gpu_make "$scale")" || continue
		nfb_k_gpu_row "gpu-x$scale" "$dat" "$NFB_WORK/gpu-x$scale" $((316 * 156 * scale))
		nfb_growth kernel "GPU timeline build (wall)" "$scale" "$gq_s"
	done
fi

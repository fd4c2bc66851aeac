# bench/engine: GPU signal operations per second through the native fence
# engine with logging on (each signal writes its 48-byte log entry into a
# 4096-entry log, the OS reads the logs every 100 us, every event goes to an
# in-memory sink; no disk), in deterministic mode (CPU time of one thread: the
# target is >= 5 million signals/s on one core) and in threaded mode (wall
# time: the API thread, the queue's GPU engine thread and the interrupt thread),
# at 1x, 10x and 100x operations. The limit, measured in the same run: writing
# the same 48-byte entries into a log of the same size in a plain loop.
# Scales: NFB_ENGINE_SCALES (default "1 10 100"), base 200000 signals.
# Sourced by bench/run.sh (see bench/README.md).

nfb_engine_bin="$NFB_BUILD/bench/engine/nfb_engine"
nfb_engine_base=200000
if [ ! -x "$nfb_engine_bin" ]; then
	nfb_row engine - "signals/s" - - - - - "nfb_engine not built"
else
	for mode in deterministic threaded; do
		prev_s=""
		prev_scale=""
		for scale in ${NFB_ENGINE_SCALES:-1 10 100}; do
			n=$((nfb_engine_base * scale))
			nfb_time lim -O "$NFB_WORK/engine-limit.out" -- "$nfb_engine_bin" limit "$n"
			read -r _ lim_s _ _ <"$NFB_WORK/engine-limit.out"
			nfb_time eng -O "$NFB_WORK/engine-run.out" -- "$nfb_engine_bin" "$mode" "$n"
			if [ "$eng_rc" != 0 ] || ! read -r _ s events lost <"$NFB_WORK/engine-run.out"; then
				nfb_row engine "x$scale" "$mode signals/s" - - - - - "nfb_engine $mode failed"
				continue
			fi
			rate=$(awk -v n="$n" -v s="$s" 'BEGIN { printf "%.0f", n / s }')
			lim_rate=$(awk -v n="$n" -v s="$lim_s" 'BEGIN { printf "%.0f", n / s }')
			ratio=$(nfb_div "$rate" "$lim_rate")
			if [ "$mode" = deterministic ]; then
				metric="det. signals/s, logging on (1 core, CPU time)"
				target=">=5000000/s"
				verdict=$(awk -v r="$rate" -v l="$lost" 'BEGIN { if (r >= 5e6) printf "meets (%d entries lost)\n", l; else printf "misses by %.2fx\n", 5e6 / r }')
			else
				metric="threaded signals/s, logging on (wall)"
				target="none (reported)"
				verdict="reported; $lost of $n entries overwritten before the OS read them"
			fi
			nfb_row engine "x$scale" "$metric" "$rate" "plain 48-B log-write loop, same run" "$lim_rate" "$ratio" "$target" "$verdict"
			nfb_row engine "x$scale" "$mode peak RSS KiB" "$eng_kb" "plain log-write loop's peak RSS" "$lim_kb" "$(nfb_div "$eng_kb" "$lim_kb")" "-" "reported: most of it is the driver's 64 MiB wrapping event buffer, touched as events arrive"
			if [ -n "$prev_s" ]; then
				growth=$(nfb_div "$s" "$prev_s")
				factor=$((scale / prev_scale))
				if [ "$mode" = deterministic ]; then
					gv=$(awk -v g="$growth" -v f="$factor" 'BEGIN { if (g <= f * 1.25) print "meets (linear)"; else printf "misses: %.2fx worse than linear\n", g / f }')
				else
					gv="reported: wall time of 3 threads on $(nproc) cores varies from run to run"
				fi
				nfb_row engine "x$scale" "$mode time growth from x$prev_scale (${factor}x ops)" "$growth" "linear" "$factor" "$(nfb_div "$growth" "$factor")" "<=1.25x linear" "$gv"
			fi
			prev_s="$s"
			prev_scale="$scale"
		done
	done
fi

# The threaded stress (tests/capture/test_threaded, case "stress") at about a
# million GPU fence operations: 4 queues waiting on each other in a ring, 6 CPU
# threads waiting (blocking, async, with timeouts) on random values. It fails
# if a waiter is not woken, a count is off, or an interrupt was not needed.
nfb_engine_stress="$NFB_BUILD/tests/capture/test_threaded"
if [ -x "$nfb_engine_stress" ]; then
	scale=25
	ops=$((4 * (2 * 5000 * scale - 1)))
	nfb_time stress -O "$NFB_WORK/engine-stress.out" -- env CK_RUN_CASE=stress NF_STRESS_SCALE=$scale "$nfb_engine_stress"
	if [ "$stress_rc" = 0 ]; then
		nfb_row engine "$ops ops" "threaded stress ops/s (wall), every waiter woken" "$(awk -v n="$ops" -v s="$stress_s" 'BEGIN { printf "%.0f", n / s }')" - - - "passes (no lost wake-up, 0 unneeded interrupts)" "meets"
	else
		nfb_row engine "$ops ops" "threaded stress" - - - - "passes" "misses: the stress failed (exit $stress_rc), see $NFB_WORK/engine-stress.out"
	fi
fi

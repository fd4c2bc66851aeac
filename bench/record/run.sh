# bench/record: recording throughput of `nftrace record` on the stress sample
# at each scale, side by side in the same run with
#   - babeltrace2's CTF writer library writing the same events (nfb_record_bt:
#     the same engine and scenario, every event through bt_ctf_*, 256 KiB
#     packets, files fsync'ed at the end as our committer does);
#   - the disk's sequential write limit: dd of the same number of bytes in
#     64 KiB blocks with conv=fsync (our recorder fsyncs its files at the end).
# babeltrace2's writer takes 2.3-3 us per operation (about 3 s for the x1
# scenario's million operations), so it runs on the x1 scenario only; larger
# scales compare per-operation rates with that x1 run (said in the peer column).
# Sourced by bench/run.sh (see bench/README.md).

# With GNU time, also CPU seconds (user+sys, the committer process included):
# on a loaded machine wall time varies, CPU time much less. Each command runs
# several times and the best wall time and the best CPU time count (ours 7
# times at x1 and 3 times beyond, the engine alone and dd 3 times; the peer,
# ~3 s a run, twice).
nfb_record_out="$NFB_WORK/record"
mkdir -p "$nfb_record_out"
nfb_record_bt_rate=""
nfb_record_bt_cpu_rate=""
nfb_gnu_time=()
[ -x /usr/bin/time ] && nfb_gnu_time=(/usr/bin/time -o "$nfb_record_out/cpu" -f "%U %S")

# nfb_record_best N DIR OUT CMD...: runs CMD N times (removing DIR before each
# run, stdout to OUT); sets best_s, best_cpu (empty without GNU time), best_rc.
nfb_record_best() {
	local n="$1" dir="$2" out="$3" r c
	shift 3
	best_s="" best_cpu="" best_rc=0 best_kb=0
	for ((r = 0; r < n; r++)); do
		[ -z "$dir" ] || rm -rf "$dir"
		rm -f "$nfb_record_out/cpu"
		nfb_time run -O "$out" -- "${nfb_gnu_time[@]}" "$@"
		if [ "$run_rc" != 0 ]; then
			best_rc=$run_rc
			return 0
		fi
		[ "$run_kb" -le "$best_kb" ] || best_kb=$run_kb
		if [ -z "$best_s" ] || awk -v a="$run_s" -v b="$best_s" 'BEGIN { exit !(a < b) }'; then
			best_s=$run_s
		fi
		c=$(awk '{ printf "%.3f", $1 + $2 }' "$nfb_record_out/cpu" 2>/dev/null || true)
		if [ -n "$c" ] && { [ -z "$best_cpu" ] || awk -v a="$c" -v b="$best_cpu" 'BEGIN { exit !(a < b) }'; }; then
			best_cpu=$c
		fi
	done
}
nfb_record_rate() { awk -v n="$1" -v s="$2" 'BEGIN { if (s > 0) printf "%.0f", n / s }'; }

for scale in $NFB_SCALES; do
	scn="$(nfb_scenario "$scale")"
	dir="$nfb_record_out/ours-x$scale"
	# Our x1 run lasts ~0.1 s against the peer's ~3 s: a short run can land
	# whole in one of this VM's slow spells (its speed swings up to 2x for
	# seconds), which the peer's long run averages over. So the short run gets
	# more tries: 7 at x1, 3 beyond (best time and best CPU time each count).
	nfb_record_best "$([ "$scale" = 1 ] && echo 7 || echo 3)" "$dir" "$nfb_record_out/ours.out" \
		"$NFB_NFTRACE" record -o "$dir" "$scn"
	if [ "$best_rc" != 0 ]; then
		nfb_row record "x$scale" "fence ops/s" - - - - - "nftrace record failed (exit $best_rc)"
		continue
	fi
	# "recorded DIR: N operations, E events, B bytes, L log entries lost"
	if ! read -r ops bytes < <(sed -n 's/^recorded .*: \([0-9]*\) operations, [0-9]* events, \([0-9]*\) bytes.*/\1 \2/p' "$nfb_record_out/ours.out"); then
		nfb_row record "x$scale" "fence ops/s" - - - - - "no 'recorded ...' line from nftrace record"
		continue
	fi
	rm -rf "$dir"
	ours_kb=$best_kb
	nfb_growth record "nftrace record (wall)" "$scale" "$best_s"
	ours_ops=$(nfb_record_rate "$ops" "$best_s")
	ours_mbs=$(awk -v b="$bytes" -v s="$best_s" 'BEGIN { printf "%.1f", b / s / 1e6 }')
	ours_cpu_rate=$(nfb_record_rate "$ops" "$best_cpu")
	# The engine alone (events dropped): how much of our CPU time is not the writer's.
	engine_cpu_rate=""
	if [ -n "$ours_cpu_rate" ] && [ -x "$NFB_BUILD/bench/record/nfb_record_bt" ]; then
		nfb_record_best 3 "" /dev/null "$NFB_BUILD/bench/record/nfb_record_bt" --null "$scn"
		[ "$best_rc" = 0 ] && engine_cpu_rate=$(nfb_record_rate "$ops" "$best_cpu")
	fi
	writer_share=$(awk -v o="$ours_cpu_rate" -v e="$engine_cpu_rate" 'BEGIN { if (o > 0 && e > 0) printf "%.0f", 100 * (1 - o / e); else print "?" }')
	bpo=$(awk -v b="$bytes" -v n="$ops" 'BEGIN { printf "%.1f", b / n }')

	# The peer: babeltrace2's CTF writer, on the x1 scenario.
	if [ -z "$nfb_record_bt_rate" ] && [ -x "$NFB_BUILD/bench/record/nfb_record_bt" ]; then
		bdir="$nfb_record_out/bt2-x1"
		nfb_record_best 2 "$bdir" "$nfb_record_out/bt.out" "$NFB_BUILD/bench/record/nfb_record_bt" "$bdir" "$(nfb_scenario 1)"
		if [ "$best_rc" = 0 ]; then
			read -r bops _ <"$nfb_record_out/bt.out" || bops=0
			nfb_record_bt_rate=$(nfb_record_rate "$bops" "$best_s")
			nfb_record_bt_cpu_rate=$(nfb_record_rate "$bops" "$best_cpu")
			nfb_record_bt_kb=$best_kb
		fi
		rm -rf "$bdir"
	fi
	if [ -n "$nfb_record_bt_rate" ]; then
		peer_name="babeltrace2 CTF writer, same events$([ "$scale" = 1 ] || echo " (x1 run, per-op rate)")"
		ratio=$(nfb_div "$ours_ops" "$nfb_record_bt_rate")
		verdict=$(awk -v r="$ratio" -v w="$writer_share" 'BEGIN { if (r >= 20) print "meets"; else printf "misses by %.2fx: of our CPU, %s%% is the writer, committer and I/O, the rest the engine both run\n", 20 / r, w }')
		nfb_row record "x$scale" "fence ops/s" "$ours_ops" "$peer_name" "$nfb_record_bt_rate" "${ratio}x" ">=20x" "$verdict"
		if [ -n "$ours_cpu_rate" ] && [ -n "$nfb_record_bt_cpu_rate" ]; then
			ratio=$(nfb_div "$ours_cpu_rate" "$nfb_record_bt_cpu_rate")
			verdict=$(awk -v r="$ratio" -v w="$writer_share" 'BEGIN { if (r >= 20) print "meets"; else printf "misses by %.2fx: of our CPU, %s%% is the writer, committer and I/O, the rest the engine both run\n", 20 / r, w }')
			nfb_row record "x$scale" "fence ops per CPU-second" "$ours_cpu_rate" "$peer_name" "$nfb_record_bt_cpu_rate" "${ratio}x" ">=20x" "$verdict"
			# The writers alone: the engine's CPU per operation (measured above,
			# events dropped) taken out of both sides, since both run it.
			if [ -n "$engine_cpu_rate" ]; then
				ratio=$(awk -v o="$ours_cpu_rate" -v b="$nfb_record_bt_cpu_rate" -v e="$engine_cpu_rate" 'BEGIN {
					ow = 1 / o - 1 / e; bw = 1 / b - 1 / e
					if (ow <= 0 || bw <= 0) print "n/a"; else printf "%.3g\n", bw / ow }')
				verdict=$(awk -v r="$ratio" 'BEGIN { if (r == "n/a") print "not measurable in this run"; else if (r >= 20) print "meets"; else printf "misses by %.2fx\n", 20 / r }')
				nfb_row record "x$scale" "writer CPU per op, engine's CPU taken out of both" "$(awk -v o="$ours_cpu_rate" -v e="$engine_cpu_rate" 'BEGIN { if (1 / o - 1 / e > 0) printf "%.1f ns\n", 1e9 * (1 / o - 1 / e); else print "n/a" }')" \
					"$peer_name" "$(awk -v b="$nfb_record_bt_cpu_rate" -v e="$engine_cpu_rate" 'BEGIN { printf "%.1f ns\n", 1e9 * (1 / b - 1 / e) }')" "${ratio}x faster" ">=20x" "$verdict"
			fi
		fi
	else
		nfb_row record "x$scale" "fence ops/s" "$ours_ops" "babeltrace2 CTF writer" - - ">=20x" "peer not built (libbabeltrace2-ctf-writer missing)"
	fi

	if [ -n "$engine_cpu_rate" ]; then
		# GNU time counts CPU in 10 ms steps and both runs are short, so when
		# the engine alone does not come out cheaper the split is not measurable.
		nfb_row record "x$scale" "fence ops per CPU-second" "$ours_cpu_rate" "the engine alone, events dropped" "$engine_cpu_rate" \
			"$(nfb_div "$ours_cpu_rate" "$engine_cpu_rate")" "context" \
			"$(awk -v w="$writer_share" 'BEGIN { if (w == "?" || w + 0 <= 0) print "split not measurable in this run (CPU times within their 10 ms resolution)"; else printf "writer, committer and I/O: %s%% of our CPU\n", w }')"
	fi

	nfb_row record "x$scale" "peak RSS KiB (recorder; committer excluded)" "$ours_kb" "babeltrace2 CTF writer run (x1)" "${nfb_record_bt_kb:--}" \
		"$([ -n "${nfb_record_bt_kb:-}" ] && nfb_div "$ours_kb" "$nfb_record_bt_kb" || echo -)" "-" "reported"

	# The limit: the disk, writing as many bytes with fsync.
	nfb_record_best 3 "$nfb_record_out/dd.bin" /dev/null dd if=/dev/zero of="$nfb_record_out/dd.bin" bs=64k count=$(((bytes + 65535) / 65536)) conv=fsync status=none
	rm -f "$nfb_record_out/dd.bin"
	dd_mbs=$(awk -v b="$bytes" -v s="$best_s" 'BEGIN { printf "%.1f", b / s / 1e6 }')
	dd_ops=$(awk -v m="$dd_mbs" -v b="$bpo" 'BEGIN { printf "%.0f", m * 1e6 / b }')
	verdict=$(awk -v o="$ours_ops" -v d="$dd_ops" -v b="$bpo" 'BEGIN {
		if (o >= 2e6) print "meets";
		else if (d < 2.2e6) printf "misses by %.2fx: at %s bytes/op the disk (fsync) allows only %.2fM ops/s\n", 2e6 / o, b, d / 1e6;
		else printf "misses by %.2fx: engine and writer CPU (the disk allows %.2fM ops/s)\n", 2e6 / o, d / 1e6 }')
	nfb_row record "x$scale" "fence ops/s vs 2M" "$ours_ops" "disk limit at $bpo B/op (dd, fsync)" "$dd_ops" "$(nfb_div "$ours_ops" "$dd_ops")" ">=2M ops/s" "$verdict"
	nfb_row record "x$scale" "MB/s written" "$ours_mbs" "disk: dd same bytes, 64k, fsync" "$dd_mbs" "$(nfb_div "$ours_mbs" "$dd_mbs")" ">=0.5 of dd" \
		"$(awk -v r="$(nfb_div "$ours_mbs" "$dd_mbs")" -v w="$writer_share" 'BEGIN {
			if (r >= 0.5) printf "meets: at %.0f%% of the disk\n", r * 100;
			else printf "misses by %.2fx: the recorder is CPU-bound, not the disk: the engine is %s%% of its CPU (writer, committer and I/O the rest; docs/PERFORMANCE.md)\n", 0.5 / r, (w == "?" ? "most" : 100 - w) }')"
done

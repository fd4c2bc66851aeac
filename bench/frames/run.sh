# Frames stage (sourced by bench/run.sh): the stress scenario with a display and a
# present every 1,024 operations (sync interval 0: the newest ready frame at each
# blank), recorded at each scale; `nftrace frames` on it (the frames, their GPU
# work, every frame's critical path and blame, written to the timeline, and the
# table printed) next to the timeline's build of the same session in the same run.
# Target (docs/PERFORMANCE.md): >= 1M operations/s.

nfb_fr_out="$NFB_WORK/frames"
mkdir -p "$nfb_fr_out"
for scale in $NFB_SCALES; do
	scen="$nfb_fr_out/stress-frames-x$scale.nfs"
	dir="$nfb_fr_out/stress-frames-x$scale"
	# stress.nfs with its outer loop split in fours and a present after each four
	sed -e "s/^fence F3 adapter GPU initial 0 process 100$/&\ndisplay Disp adapter GPU refresh 60Hz process 100/" \
	    -e "s/^repeat 4000 as \\\$b {$/repeat $((1000 * scale)) as \$c {\nrepeat 4 as \$d {/" \
	    -e 's/\$b\*32/($c*4+$d)*32/g' \
	    -e 's/^}$/}\npresent Q3 Disp interval 0\n}/' \
	    "$NFB_SOURCE/samples/stress.nfs" >"$scen"
	if [ ! -f "$dir/metadata" ]; then
		"$NFB_NFTRACE" record --force -o "$dir" "$scen" >/dev/null 2>"$nfb_fr_out/record.err" || {
			nfb_row frames "x$scale" "frames and blame" - - - - - "recording failed: $(head -c 200 "$nfb_fr_out/record.err")"
			continue
		}
	fi
	rm -f "$dir/.timeline.db"
	nfb_time frbuild -- "$NFB_NFTRACE" query "$dir" "select 1"
	nfb_time fr -O "$nfb_fr_out/out" -- "$NFB_NFTRACE" frames "$dir"
	if [ "$fr_rc" != 0 ] || [ "$frbuild_rc" != 0 ]; then
		nfb_row frames "x$scale" "frames and blame" - - - - - "failed (exit $fr_rc / build $frbuild_rc)"
		continue
	fi
	ops="$("$NFB_NFTRACE" query --csv "$dir" "select count(*) from fence_ops" | tail -1)"
	frames="$("$NFB_NFTRACE" query --csv "$dir" "select count(*) from frames" | tail -1)"
	segs="$("$NFB_NFTRACE" query --csv "$dir" "select count(*) from frame_path" | tail -1)"
	rate="$(awk -v n="$ops" -v s="$fr_s" 'BEGIN { printf "%.0f", n / s }')"
	rate_cpu="$(awk -v n="$ops" -v s="$fr_cpu" 'BEGIN { printf "%.0f", n / s }')"
	build_rate="$(awk -v n="$ops" -v s="$frbuild_s" 'BEGIN { printf "%.0f", n / s }')"
	nfb_row frames "x$scale" "frames and blame ops/s ($ops ops, $frames frames, $segs path segments, ${fr_s}s; CPU ${rate_cpu}/s; ${fr_kb} KiB)" \
		"$rate" "timeline build ops/s" "$build_rate" "$(nfb_div "$rate" "$build_rate")" ">=1M/s" \
		"$(awk -v r="$rate" -v rc="$rate_cpu" 'BEGIN {
			if (r >= 1000000) print "meets"
			else if (rc >= 1000000) print "meets on CPU time (wall " r "/s on a shared machine)"
			else print "misses" }')"
	nfb_growth frames "frames and blame" "$scale" "$fr_s"
done

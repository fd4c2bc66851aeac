# bench/render: `nftrace report` on the stress session at each scale: seconds to
# PNG and to SVG (timeline database already built), the SVG's size, peak memory,
# and once per scale the first PNG of a fresh session (database removed first):
# the picture drawn before the build loads the operations (issue 32: at most
# 5 s at x10 and 2x `nftrace check` of the same session, measured here too).
# Peer, measured in the same run: the stock sqlite3 shell reading the same
# fence_ops columns the viewer reads (one aggregate over every row, nothing
# printed per row). A report of the whole session has to read every operation,
# so that scan is the floor the render time is compared with; the ratio says
# how much drawing, level of detail and encoding add on top of it.
# Targets (docs/PERFORMANCE.md): PNG under 3 s and SVG under 20 MB on the x1 session; the
# same targets are applied to larger scales as a stretch.
# Sourced by bench/run.sh (see bench/README.md).

nfb_render_out="$NFB_WORK/render"
mkdir -p "$nfb_render_out"
nfb_render_gnu=()
[ -x /usr/bin/time ] && nfb_render_gnu=(/usr/bin/time -o "$nfb_render_out/cpu" -f "%U %S")
nfb_render_cpu() { awk '{ printf "%.2f", $1 + $2 }' "$nfb_render_out/cpu" 2>/dev/null || echo "?"; }
nfb_render_kb1=""

for scale in $NFB_SCALES; do
	dir="$(nfb_session "$scale")" || { nfb_row render "x$scale" "PNG s" - - - - - "recording the session failed"; continue; }
	db="$dir/.timeline.db"

	# 1. First report of a fresh session: the first picture (drawn before the
	# build loads the operations: report --first-picture auto), then the rest
	# of the build. The picture's time is when the PNG appeared (it is renamed
	# into place whole); the command's, when the timeline was complete too.
	rm -f "$db" "$nfb_render_out/first.png"
	nfb_time first -w "$nfb_render_out/first.png" -- "$NFB_NFTRACE" report "$dir" -o "$nfb_render_out/first.png"
	if [ "$first_rc" != 0 ] || [ ! -f "$db" ]; then
		nfb_row render "x$scale" "PNG s incl. analysis" - - - - - "nftrace report failed (exit $first_rc)"
		continue
	fi
	# The parse of the same session (nftrace check, the timeline built: the parse stage's figure).
	nfb_time chk -- "$NFB_NFTRACE" check "$dir"
	ratio=$(nfb_div "$first_seen" "$chk_s")
	verdict=$(awk -v s="$first_seen" -v r="$ratio" 'BEGIN {
		if (s < 0) print "misses: no first picture";
		else if (s <= 5 && r <= 2) print "meets";
		else if (s > 5) printf "misses by %.2fx (5 s)\n", s / 5;
		else printf "misses: %.2fx the parse (2x)\n", r }')
	nfb_row render "x$scale" "first PNG s, cold (the build done at $(awk -v s="$first_s" 'BEGIN { printf "%.1f", s }') s)" "$first_seen" \
		"nftrace check of the session" "$chk_s" "${ratio}x" "<=5 s and <=2x check" "$verdict"

	# 2. Peer: sqlite3 reading the columns the viewer reads, every row (page cache warm).
	q="SELECT count(*), sum(queue), sum(op = 'wait'), sum(coalesce(queued_ns, observed_ns, end_ns)),"
	q="$q sum(observed_ns), sum(end_ns), count(CASE WHEN end_ns IS NULL THEN status END) FROM fence_ops"
	sqlite3 "$db" "$q" >/dev/null
	rm -f "$nfb_render_out/cpu"
	nfb_time peer -O "$nfb_render_out/peer.out" -- "${nfb_render_gnu[@]}" sqlite3 "$db" "$q"
	peer_cpu="$(nfb_render_cpu)"
	ops=$(cut -d'|' -f1 "$nfb_render_out/peer.out")

	# 3. PNG and SVG with the database built.
	rm -f "$nfb_render_out/cpu"
	nfb_time png -- "${nfb_render_gnu[@]}" "$NFB_NFTRACE" report "$dir" -o "$nfb_render_out/x$scale.png"
	png_cpu="$(nfb_render_cpu)"
	rm -f "$nfb_render_out/cpu"
	nfb_time svg -- "${nfb_render_gnu[@]}" "$NFB_NFTRACE" report "$dir" -o "$nfb_render_out/x$scale.svg"
	svg_cpu="$(nfb_render_cpu)"
	if [ "$png_rc" != 0 ] || [ "$svg_rc" != 0 ]; then
		nfb_row render "x$scale" "PNG/SVG s" - - - - - "nftrace report failed (png exit $png_rc, svg exit $svg_rc)"
		continue
	fi
	svg_bytes=$(stat -c %s "$nfb_render_out/x$scale.svg")
	svg_mb=$(awk -v b="$svg_bytes" 'BEGIN { printf "%.3f", b / 1048576 }')
	peer_name="sqlite3: the same $ops rows' columns (cpu ${peer_cpu} s)"

	for f in png svg; do
		eval "s=\$${f}_s cpu=\$${f}_cpu"
		ratio=$(nfb_div "$s" "$peer_s")
		verdict=$(awk -v s="$s" -v c="$cpu" 'BEGIN {
			if (s < 3) print "meets";
			else if (c != "?" && c < 3) printf "misses by %.1fx in wall time on a loaded machine; cpu %s s meets\n", s / 3, c;
			else printf "misses by %.1fx: every operation is read (twice: the rows, and the threads that queued work); see the sqlite3 floor\n", s / 3 }')
		nfb_row render "x$scale" "${f^^} s (db built; cpu $cpu s)" "$s" "$peer_name" "$peer_s" "${ratio}x" "<3 s" "$verdict"
	done
	verdict=$(awk -v m="$svg_mb" 'BEGIN { if (m < 20) print "meets"; else printf "misses by %.1fx\n", m / 20 }')
	nfb_row render "x$scale" "SVG MB" "$svg_mb" "limit" "20" "$(nfb_div "$svg_mb" 20)x" "<20 MB" "$verdict"
	nfb_growth render "PNG (wall, db built)" "$scale" "$png_s"
	nfb_growth render "SVG (wall, db built)" "$scale" "$svg_s"

	nfb_growth render "first PNG (cold)" "$scale" "$first_seen"

	[ -z "$nfb_render_kb1" ] && nfb_render_kb1="$png_kb"
	mratio=$(nfb_div "$png_kb" "$peer_kb")
	growth=$(nfb_div "$png_kb" "$nfb_render_kb1")
	verdict=$(awk -v g="$growth" 'BEGIN { if (g <= 1.5) print "meets (x" g " of our first scale)"; else printf "misses: peak grows x%s with the session\n", g }')
	nfb_row render "x$scale" "PNG peak RSS KiB" "$png_kb" "sqlite3 scan" "$peer_kb" "${mratio}x" "flat across scales" "$verdict"
done

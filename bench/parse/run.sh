# bench/parse: parse throughput of our parser (the native reader, parser/fastread.c,
# for our own sessions; NFTRACE_READER=babeltrace2 measures the libbabeltrace2
# graph instead) -> nf_event -> log replay, driven by `nftrace check --json`, which reads every event of
# the session and replays every log) on the stress session at each scale, side
# by side in the same run with the stock `babeltrace2 DIR > /dev/null` text
# dump of the same session. Both rates count the log entries the session holds
# (what check reports as read), so the ratio is the ratio of wall times.
# Peak memory of both, too: ours must stay flat as the session grows (bounded
# by the number of queues, not of events).
# Sourced by bench/run.sh (see bench/README.md).

nfb_parse_out="$NFB_WORK/parse"
mkdir -p "$nfb_parse_out"
nfb_parse_kb1=""

for scale in $NFB_SCALES; do
	dir="$(nfb_session "$scale")" || { nfb_row parse "x$scale" "log entries/s" - - - - - "recording the session failed"; continue; }
	# One untimed pass of each, so both start with the files in the page cache.
	"$NFB_NFTRACE" check "$dir" >/dev/null 2>&1 || true
	babeltrace2 "$dir" >/dev/null 2>&1 || true

	nfb_time ours -O "$nfb_parse_out/check.json" -- "$NFB_NFTRACE" check --json "$dir"
	if [ "$ours_rc" != 0 ]; then
		nfb_row parse "x$scale" "log entries/s" - - - - - "nftrace check failed (exit $ours_rc)"
		continue
	fi
	entries=$(sed -n 's/^  "entries": \([0-9]*\),$/\1/p' "$nfb_parse_out/check.json")
	events=$(sed -n 's/^  "events": \([0-9]*\),$/\1/p' "$nfb_parse_out/check.json")
	nfb_time bt -- babeltrace2 "$dir"
	ours_rate=$(awk -v n="$entries" -v s="$ours_s" 'BEGIN { printf "%.0f", n / s }')
	if [ "$bt_rc" != 0 ]; then
		nfb_row parse "x$scale" "log entries/s" "$ours_rate" "babeltrace2 DIR > /dev/null" - - ">1x" "peer failed (exit $bt_rc)"
		continue
	fi
	bt_rate=$(awk -v n="$entries" -v s="$bt_s" 'BEGIN { printf "%.0f", n / s }')
	ratio=$(nfb_div "$ours_rate" "$bt_rate")
	verdict=$(awk -v r="$ratio" 'BEGIN { if (r > 1) print "meets"; else printf "misses by %.2fx: ours adds the log replay\n", 1 / r }')
	nfb_row parse "x$scale" "log entries/s ($entries entries, $events events)" "$ours_rate" \
		"babeltrace2 DIR > /dev/null (text dump)" "$bt_rate" "${ratio}x" ">1x" "$verdict"
	nfb_growth parse "nftrace check (wall)" "$scale" "$ours_s"

	# Peak memory, net of each program's start-up (nftrace maps cairo, SQLite and
	# friends, babeltrace2 less): compared with the text dump, and with our own
	# figure at the first scale (it must stay flat: bounded by queues, not events).
	nfb_time ours0 -- "$NFB_NFTRACE" --version
	nfb_time bt0 -- babeltrace2 --version
	ours_net=$((ours_kb - ours0_kb))
	bt_net=$((bt_kb - bt0_kb))
	[ -z "$nfb_parse_kb1" ] && nfb_parse_kb1="$ours_net"
	mratio=$(nfb_div "$ours_net" "$bt_net")
	growth=$(nfb_div "$ours_net" "$nfb_parse_kb1")
	verdict=$(awk -v r="$mratio" -v g="$growth" 'BEGIN {
		if (r <= 1.1 && g <= 1.5) print "meets (x" g " of our first scale)";
		else if (g > 1.5) printf "misses: peak grows x%s with the session\n", g;
		else printf "misses by %.2fx: above the text dump\n", r }')
	nfb_row parse "x$scale" "peak RSS KiB above start-up (total $ours_kb)" "$ours_net" \
		"babeltrace2 text dump (total $bt_kb)" "$bt_net" "${mratio}x" "<=1.1x, flat across scales" "$verdict"
done

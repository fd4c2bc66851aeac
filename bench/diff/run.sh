# bench/diff: `nftrace diff A B` of two stress sessions at each scale (the stress
# sample and a second recording of it with --seed 2; both timelines built first,
# untimed: the analyzer stage's work), next to the peer measured in the same run:
# the stock sqlite3 shell reading both timelines' fence_ops and deps (the columns
# the diff reads, one aggregate per table, nothing printed per row), one session
# after the other. A diff has to read every operation and every dependency of
# both sessions, so that read is its floor; it also runs the hang check and the
# critical path on each (one more pass over the operations) and sorts the samples.
# Target (docs/PERFORMANCE.md): the x10 diff (10 M operations a side) in <= 2x the
# peer's wall time. Both wall and CPU (user + sys) are reported, with peak memory.
# Sourced by bench/run.sh (see bench/README.md).

nfb_diff_out="$NFB_WORK/diff"
mkdir -p "$nfb_diff_out"
for scale in $NFB_SCALES; do
	a="$(nfb_session "$scale")" || { nfb_row diff "x$scale" "diff s" - - - - - "recording the session failed"; continue; }
	b="$NFB_WORK/stress-x$scale-seed2"
	if [ ! -f "$b/metadata" ]; then
		"$NFB_NFTRACE" record --force --seed 2 -o "$b" "$(nfb_scenario "$scale")" >/dev/null 2>"$NFB_WORK/record.err" || {
			cat "$NFB_WORK/record.err" >&2
			nfb_row diff "x$scale" "diff s" - - - - - "recording the second session failed"
			continue
		}
	fi
	"$NFB_NFTRACE" query "$a" "select 1" >/dev/null && "$NFB_NFTRACE" query "$b" "select 1" >/dev/null ||
		{ nfb_row diff "x$scale" "diff s" - - - - - "analysis failed"; continue; }

	q="SELECT count(*), sum(id), sum(queue), sum(length(op)), sum(fence), sum(value), sum(queued_ns),"
	q="$q sum(observed_ns), sum(end_ns), sum(length(status)), sum(log_seq) FROM fence_ops;"
	q="$q SELECT count(*), sum(wait_id), sum(signal_id), sum(cpu_signal), sum(stall_ns) FROM deps;"
	printf '%s\n' "$a/.timeline.db" "$b/.timeline.db" >"$nfb_diff_out/dbs"
	sqlite3 "$a/.timeline.db" "$q" >/dev/null # warm the page cache for both
	sqlite3 "$b/.timeline.db" "$q" >/dev/null
	nfb_time peer -O "$nfb_diff_out/peer.out" -- sh -c 'while read -r db; do sqlite3 "$db" "$1"; done <"$2"' sh "$q" "$nfb_diff_out/dbs"
	ops=$(head -1 "$nfb_diff_out/peer.out" | cut -d'|' -f1)
	nfb_time ours -O "$nfb_diff_out/diff.out" -- "$NFB_NFTRACE" diff "$a" "$b" --fail-on 'regression'
	if [ "$ours_rc" != 0 ] || [ "$peer_rc" != 0 ]; then
		nfb_row diff "x$scale" "diff s" - - - - - "failed (diff exit $ours_rc, sqlite3 exit $peer_rc)"
		continue
	fi
	ratio=$(nfb_div "$ours_s" "$peer_s")
	cratio=$(nfb_div "$ours_cpu" "$peer_cpu")
	verdict=$(awk -v r="$ratio" -v c="$cratio" 'BEGIN {
		if (r == "n/a") print "n/a"; else if (r <= 2) print "meets"; else if (c <= 2) print "misses in wall time on a loaded machine; CPU " c "x meets"; else print "misses (" r "x)" }')
	nfb_row diff "x$scale" "diff s, two sessions of $ops ops (CPU ${ours_cpu} s, peak $((ours_kb / 1024)) MB)" "$ours_s" \
		"sqlite3 reading both fence_ops + deps (CPU ${peer_cpu} s)" "$peer_s" "${ratio}x" "<=2x" "$verdict"
	nfb_row diff "x$scale" "diff CPU s (user + sys; two threads)" "$ours_cpu" "sqlite3 CPU s" "$peer_cpu" "${cratio}x" \
		"(reported)" "reported"
	nfb_growth diff "diff" "$scale" "$ours_s"
done

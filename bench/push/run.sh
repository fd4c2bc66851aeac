# bench/push: `nftrace push` of the stress session at each scale into a ClickHouse
# server this stage starts (own config and data directory, free ports on 127.0.0.1,
# stopped at the end; the stage is skipped with a row when clickhouse-server is absent).
# Ours: rows per second of the push (timeline database already built: the analyzer
# stage's work), peak memory. Peer, same run: clickhouse-client inserting the same rows
# from files (each table's rows, exported from the store in Native format beforehand)
# into tables of the same structure. Target (docs/PERFORMANCE.md): >= 0.8x the peer's rows/s.
# NFB_PUSH_ROUNDS (default 3) rounds of ours then the peer, each after the server's
# merges have ended; the best wall of each is compared, and a second row compares
# CPU time: the client's (user+sys) plus the server's while it ran.
# Then a cross-session query (the README's "machines that lose log entries") over 100
# sessions pushed to a two-shard cluster (a second server this stage starts), beside
# the same count run with `nftrace query` on each session's SQLite timeline in turn.
# Sourced by bench/run.sh (see bench/README.md).

nfb_push_dir="$NFB_WORK/push"
if ! command -v clickhouse-server >/dev/null || ! command -v clickhouse-client >/dev/null; then
	nfb_row push - "rows/s" - - - - - "skipped: clickhouse-server/clickhouse-client not installed"
else
	rm -rf "$nfb_push_dir" && mkdir -p "$nfb_push_dir"
	nfb_push_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
	nfb_push_http=$(nfb_push_port); nfb_push_tcp=$(nfb_push_port)
	nfb_push_http2=$(nfb_push_port); nfb_push_tcp2=$(nfb_push_port)
	nfb_push_config() { # DIR HTTP TCP
	d="$1"; mkdir -p "$d"
	cat >"$d/config.xml" <<XML
<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>$d/server.log</log><errorlog>$d/server.err.log</errorlog><console>0</console></logger>
  <http_port>$2</http_port><tcp_port>$3</tcp_port><listen_host>127.0.0.1</listen_host>
  <path>$d/data/</path><tmp_path>$d/tmp/</tmp_path><user_files_path>$d/uf/</user_files_path>
  <format_schema_path>$d/fs/</format_schema_path><mark_cache_size>5368709</mark_cache_size>
  <users><default><password></password><networks><ip>127.0.0.1</ip></networks><profile>default</profile><quota>default</quota></default></users>
  <profiles><default></default></profiles><quotas><default></default></quotas>
  <remote_servers><nfb>
    <shard><replica><host>127.0.0.1</host><port>$nfb_push_tcp</port></replica></shard>
    <shard><replica><host>127.0.0.1</host><port>$nfb_push_tcp2</port></replica></shard>
  </nfb></remote_servers>
</yandex>
XML
	}
	nfb_push_config "$nfb_push_dir/s2" "$nfb_push_http2" "$nfb_push_tcp2"
	nfb_push_config "$nfb_push_dir" "$nfb_push_http" "$nfb_push_tcp"
	clickhouse-server --config-file="$d/config.xml" >"$d/server.out" 2>&1 &
	nfb_push_pid=$!
	url="http://127.0.0.1:$nfb_push_http"
	for _ in $(seq 300); do [ "$(curl -s "$url/ping")" = "Ok." ] && break; sleep 0.1; done
	chq() { curl -sS --data-binary "$1" "$url/?database=nftrace"; }
	for scale in $NFB_SCALES; do
		dir="$(nfb_session "$scale")" || { nfb_row push "x$scale" "rows/s" - - - - - "recording the session failed"; continue; }
		"$NFB_NFTRACE" query "$dir" "select 1" >/dev/null || { nfb_row push "x$scale" "rows/s" - - - - - "analysis failed"; continue; }
		# the server's CPU seconds so far (user + system), and a wait for its
		# background merges to end, so each timed run starts on a quiet server
		nfb_push_srv_cpu() { awk -v t="$(getconf CLK_TCK)" '{ printf "%.2f\n", ($14 + $15) / t }' "/proc/$nfb_push_pid/stat"; }
		nfb_push_settle() { for _ in $(seq 600); do [ "$(chq "SELECT count() FROM system.merges")" = 0 ] && break; sleep 0.1; done; }
		id=$(basename "$dir")
		best_s=; best_cpu=; best_srv=; pbest_s=; pbest_cpu=; pbest_srv=; peer_rc=0; ours_fail=
		# rounds of ours then the peer, alternating (the machine is shared: best wall of each)
		for round in $(seq "${NFB_PUSH_ROUNDS:-3}"); do
			nfb_push_settle
			c0=$(nfb_push_srv_cpu)
			nfb_time ours -O "$d/push.out" -- "$NFB_NFTRACE" push "$dir" --clickhouse "$url"
			c1=$(nfb_push_srv_cpu)
			if [ "$ours_rc" != 0 ]; then ours_fail=$ours_rc; break; fi
			if [ -z "$best_s" ] || awk -v a="$ours_s" -v b="$best_s" 'BEGIN { exit !(a < b) }'; then
				best_s=$ours_s; best_cpu=$ours_cpu; best_srv=$(awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%.2f", b - a }'); best_kb=$ours_kb
			fi
			if [ "$round" = 1 ]; then
				rows=$(sed -n 's/.*: \([0-9]*\) rows in.*/\1/p' "$d/push.out")
				# the peer's input: the same rows, one Native file per table, and empty tables alike
				tables=$(chq "SELECT name FROM system.tables WHERE database = 'nftrace' AND NOT startsWith(name, '_') AND NOT startsWith(name, 'peer_') AND name != 'sessions'")
				: >"$d/peer.sh"
				for t in $tables; do
					chq "SELECT * FROM \`$t\` WHERE session = '$id' FORMAT Native" >"$d/$t.native"
					chq "DROP TABLE IF EXISTS \`peer_$t\`" && chq "CREATE TABLE \`peer_$t\` AS \`$t\`"
					[ -s "$d/$t.native" ] && echo "clickhouse-client --port $nfb_push_tcp -d nftrace -q 'INSERT INTO \`peer_$t\` FORMAT Native' <'$d/$t.native'" >>"$d/peer.sh"
				done
			fi
			for t in $tables; do chq "TRUNCATE TABLE \`peer_$t\`"; done
			nfb_push_settle
			c0=$(nfb_push_srv_cpu)
			nfb_time peer -- sh -e "$d/peer.sh"
			c1=$(nfb_push_srv_cpu)
			[ "$peer_rc" = 0 ] || break
			if [ -z "$pbest_s" ] || awk -v a="$peer_s" -v b="$pbest_s" 'BEGIN { exit !(a < b) }'; then
				pbest_s=$peer_s; pbest_cpu=$peer_cpu; pbest_srv=$(awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%.2f", b - a }')
			fi
		done
		if [ -n "$ours_fail" ]; then
			nfb_row push "x$scale" "rows/s" - - - - - "nftrace push failed (exit $ours_fail)"
			continue
		fi
		peer_rows=$(chq "SELECT sum(rows) FROM system.parts WHERE database = 'nftrace' AND active AND startsWith(table, 'peer_')")
		rm -f "$d"/*.native
		rate=$(awk -v n="$rows" -v s="$best_s" 'BEGIN { if (s > 0) printf "%.0f", n / s; else print 0 }')
		prate=$(awk -v n="$peer_rows" -v s="$pbest_s" 'BEGIN { if (s > 0) printf "%.0f", n / s; else print 0 }')
		ratio=$(nfb_div "$rate" "$prate")
		verdict=$(awk -v r="$ratio" -v a="$rows" -v b="$peer_rows" 'BEGIN {
			if (a != b) printf "peer inserted %s rows, not %s\n", b, a;
			else if (r >= 0.8) print "meets"; else printf "misses (%.2fx)\n", r }')
		nfb_row push "x$scale" "rows/s, best wall of ${NFB_PUSH_ROUNDS:-3} ($rows rows, ${best_s} s, peak $best_kb KiB)" "$rate" \
			"clickhouse-client INSERT FORMAT Native from files (rc $peer_rc, ${pbest_s} s)" "$prate" "${ratio}x" ">=0.8x peer" "$verdict"
		# the same runs in CPU time: client and server together (our push vs
		# clickhouse-client, each with the server's CPU while it ran)
		crate=$(awk -v n="$rows" -v a="$best_cpu" -v b="$best_srv" 'BEGIN { if (a + b > 0) printf "%.0f", n / (a + b); else print 0 }')
		pcrate=$(awk -v n="$peer_rows" -v a="$pbest_cpu" -v b="$pbest_srv" 'BEGIN { if (a + b > 0) printf "%.0f", n / (a + b); else print 0 }')
		cratio=$(nfb_div "$crate" "$pcrate")
		verdict=$(awk -v r="$cratio" 'BEGIN { if (r >= 0.8) print "meets"; else printf "misses (%.2fx)\n", r }')
		nfb_row push "x$scale" "rows per CPU second, client+server (ours ${best_cpu}+${best_srv} s)" "$crate" \
			"clickhouse-client + server (${pbest_cpu}+${pbest_srv} s)" "$pcrate" "${cratio}x" ">=0.8x peer" "$verdict"
	done
	# a cross-session query over 100 sessions on the two-shard cluster
	clickhouse-server --config-file="$d/s2/config.xml" >"$d/s2/server.out" 2>&1 &
	nfb_push_pid2=$!
	url2="http://127.0.0.1:$nfb_push_http2"
	for _ in $(seq 300); do [ "$(curl -s "$url2/ping")" = "Ok." ] && break; sleep 0.1; done
	mkdir -p "$d/fleet"
	for i in $(seq 100); do
		[ -d "$d/fleet/m$i" ] || "$NFB_NFTRACE" record -o "$d/fleet/m$i" --seed "$i" "$NFB_SOURCE/samples/overrun.nfs" >/dev/null
		"$NFB_NFTRACE" query "$d/fleet/m$i" "select 1" >/dev/null
	done
	nfb_time fpush -- "$NFB_NFTRACE" push "$d"/fleet/m* --cluster nfb --clickhouse "$url" --clickhouse "$url2" --database fleet --quiet
	sql="SELECT host, uniqExact(session) AS sessions, count() AS lost_ops FROM fence_ops ALL INNER JOIN (SELECT session, host FROM sessions) USING session WHERE status = 'lost' GROUP BY host"
	nfb_time fq -O "$d/fq.out" -- "$NFB_NFTRACE" query --clickhouse "$url" --database fleet --csv "$sql"
	printf '%s\n' "$d"/fleet/m* >"$d/fleet.list"
	nfb_time lq -O "$d/lq.out" -- sh -c 'while read -r s; do "$0" query "$s" --csv "SELECT count(*) FROM fence_ops WHERE status = '"'lost'"'" | tail -n 1; done <"$1"' "$NFB_NFTRACE" "$d/fleet.list"
	ch_lost=$(tail -n 1 "$d/fq.out" | cut -d, -f3)
	lite_lost=$(awk '{ s += $1 } END { print s }' "$d/lq.out")
	if [ "$fpush_rc" != 0 ] || [ "$fq_rc" != 0 ]; then
		nfb_row push "100 sessions" "cluster query s" - - - - - "push or query failed (exit $fpush_rc/$fq_rc)"
	else
		verdict=$([ "$ch_lost" = "$lite_lost" ] && echo "same count ($ch_lost lost)" || echo "counts differ: $ch_lost vs $lite_lost")
		nfb_row push "100 sessions" "2-shard cluster query s (push of the 100: ${fpush_s} s)" "$fq_s" \
			"nftrace query on each SQLite timeline in turn" "$lq_s" "$(nfb_div "$fq_s" "$lq_s")x" "(no target)" "$verdict"
	fi
	kill "$nfb_push_pid" "$nfb_push_pid2" 2>/dev/null; wait "$nfb_push_pid" "$nfb_push_pid2" 2>/dev/null || true
fi

#!/bin/sh
# test_push: nftrace push / query --clickhouse against a real ClickHouse server
# started here as this test's own process (own config, data directory and ports
# on 127.0.0.1, stopped at the end). Skips (77) when clickhouse-server is absent.
#
# usage: test_push.sh NFTRACE SOURCE_DIR
set -u
NF=$1
SRC=$2
CHS=$(command -v clickhouse-server || true)
if [ -z "$CHS" ]; then
  echo "SKIP: clickhouse-server is not installed (scripts/install-deps.sh installs it)"
  exit 77
fi
T=$(mktemp -d /tmp/nftrace-push.XXXXXX)
SRV=
PROXY=
PUSHPID=
cleanup() {
  for p in $PUSHPID $PROXY $SRV $SRV2; do kill -9 "$p" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; [ -f "$T/server.err.log" ] && tail -5 "$T/server.err.log"; exit 1; }

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
HTTP=$(free_port); TCP=$(free_port); HTTP2=$(free_port); TCP2=$(free_port)
[ "$(printf '%s\n' $HTTP $TCP $HTTP2 $TCP2 | sort -u | wc -l)" = 4 ] || fail "could not find four distinct free ports"
# server 1 alone for the single-node path; servers 1 and 2 are the two shards of cluster nf
write_config() { # DIR HTTP TCP
mkdir -p "$1"
cat > "$1/config.xml" <<XML
<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>$1/server.log</log><errorlog>$1/server.err.log</errorlog><console>0</console></logger>
  <http_port>$2</http_port>
  <tcp_port>$3</tcp_port>
  <listen_host>127.0.0.1</listen_host>
  <path>$1/data/</path>
  <tmp_path>$1/tmp/</tmp_path>
  <user_files_path>$1/user_files/</user_files_path>
  <format_schema_path>$1/format_schemas/</format_schema_path>
  <mark_cache_size>5368709</mark_cache_size>
  <max_concurrent_queries>20</max_concurrent_queries>
  <users><default><password></password><networks><ip>127.0.0.1</ip></networks><profile>default</profile><quota>default</quota></default></users>
  <profiles><default></default></profiles>
  <quotas><default></default></quotas>
  <remote_servers><nf>
    <shard><replica><host>127.0.0.1</host><port>$TCP</port></replica></shard>
    <shard><replica><host>127.0.0.1</host><port>$TCP2</port></replica></shard>
  </nf></remote_servers>
</yandex>
XML
}
write_config "$T" $HTTP $TCP
write_config "$T/s2" $HTTP2 $TCP2
URL=http://127.0.0.1:$HTTP
URL2=http://127.0.0.1:$HTTP2

start_server() { # [DIR URL]: sets SRV (or SRV2 for the second)
  d=${1:-$T}; u=${2:-$URL}
  "$CHS" --config-file="$d/config.xml" > "$d/server.out" 2>&1 &
  pid=$!
  if [ "$d" = "$T" ]; then SRV=$pid; else SRV2=$pid; fi
  i=0
  until [ "$(curl -s "$u/ping" 2>/dev/null)" = "Ok." ]; do
    i=$((i + 1))
    [ $i -gt 300 ] && fail "clickhouse-server did not answer on $u in 30 s"
    kill -0 $pid 2>/dev/null || fail "clickhouse-server exited: $(tail -3 "$d/server.out")"
    sleep 0.1
  done
}
SRV2=
stop_server() { kill -TERM $SRV $SRV2 2>/dev/null; wait $SRV $SRV2 2>/dev/null; SRV=; SRV2=; }
DB=nftrace
ch() { "$NF" query --clickhouse "$URL" --database $DB --csv "$1" | tail -n +2; }
lite() { sqlite3 "$1/.timeline.db" "$2"; }

start_server
for s in stall-chain overrun; do
  "$NF" record -o "$T/$s" "$SRC/samples/$s.nfs" > /dev/null || fail "record $s"
done

# 1. two sessions pushed: per-table row counts and aggregates equal SQLite's
"$NF" push "$T/stall-chain" "$T/overrun" --clickhouse "$URL" > "$T/push.out" || fail "push: $(cat "$T/push.out")"
TABLES=$(lite "$T/overrun" "SELECT name FROM sqlite_master WHERE type='table' AND name NOT IN ('meta','stall_blame') AND name NOT LIKE 'sqlite%' ORDER BY name")
[ -n "$TABLES" ] || fail "no tables in the timeline"
compare_counts() { # SESSION: every table's rows, one query on each side
  ql= qc=
  for t in $TABLES; do
    ql="$ql${ql:+ UNION ALL }SELECT '$t', count(*) FROM $t"
    qc="$qc${qc:+ UNION ALL }SELECT '$t', count() FROM $t WHERE session = '$1'"
  done
  lite "$T/$1" "$ql" | tr '|' , | sort > "$T/counts.lite"
  ch "$qc" | tr -d '"' | sort > "$T/counts.ch"
  [ "$(wc -l < "$T/counts.lite")" = "$(echo $TABLES | wc -w)" ] || fail "$1: SQLite counts: $(cat "$T/counts.lite")"
  cmp -s "$T/counts.lite" "$T/counts.ch" ||
    fail "$1: rows per table differ (SQLite, ClickHouse): $(diff "$T/counts.lite" "$T/counts.ch" | tr '\n' ' ')"
  nonzero=$(grep -vc ',0$' "$T/counts.lite")
  [ $nonzero -ge 4 ] || fail "$1: only $nonzero non-empty tables compared"
  n=$(ch "SELECT count() FROM sessions WHERE session = '$1'")
  [ "$n" = 1 ] || fail "$1: listed $n times in sessions"
}
compare_counts stall-chain
compare_counts overrun
# aggregates and NULLs survive: stall sum, lost operations, NULL end times, a text column
a=$(lite "$T/stall-chain" "SELECT count(stall_ns), sum(stall_ns), max(stall_ns) FROM deps" | tr '|' ,)
b=$(ch "SELECT count(stall_ns), sum(stall_ns), max(stall_ns) FROM deps WHERE session = 'stall-chain'")
[ "$a" = "$b" ] || fail "deps stall count/sum/max: SQLite $a, ClickHouse $b"
[ "${a%%,*}" != 0 ] || fail "stall-chain has no stalls to compare"
a=$(lite "$T/overrun" "SELECT count(*), sum(end_ns IS NULL), sum(queue) FROM fence_ops WHERE status = 'lost'" | tr '|' ,)
b=$(ch "SELECT count(), sum(isNull(end_ns)), sum(queue) FROM fence_ops WHERE session = 'overrun' AND status = 'lost'")
[ "$a" = "$b" ] || fail "lost operations: SQLite $a, ClickHouse $b"
[ "${a%%,*}" != 0 ] || fail "overrun has no lost operations to compare"
a=$(lite "$T/overrun" "SELECT value FROM meta WHERE key = 'seed'")
b=$(ch "SELECT seed FROM sessions WHERE session = 'overrun'")
[ "\"$a\"" = "$b" ] || fail "seed: meta $a, sessions $b"

# 1b. an imported capture (trace-cmd file of a drm scheduler): jobs, CPU runs, kernel fences
"$NF" import "$SRC/samples/kernel/drm-sched.dat" -o "$T/imported" > /dev/null || fail "import drm-sched.dat"
"$NF" push "$T/imported" --clickhouse "$URL" --quiet || fail "push imported"
compare_counts imported
[ "$(ch "SELECT count() FROM jobs WHERE session = 'imported'")" -ge 1 ] || fail "imported: no jobs pushed"

# 2. pushed again: replaced, not doubled
"$NF" push "$T/overrun" --clickhouse "$URL" --quiet || fail "second push"
compare_counts overrun
compare_counts stall-chain

# 3. a push killed half-way (kill -9 while its 10th batch is in flight): the
#    session is not listed and none of its rows are live; pushed again: exact
start_proxy() { # MODE N
  rm -f "$T/proxy.port" "$T/marker"
  python3 "$SRC/tests/push/ch_proxy.py" "$T/proxy.port" "$HTTP" "$2" "$1" "$T/marker" &
  PROXY=$!
  i=0
  until [ -s "$T/proxy.port" ]; do i=$((i + 1)); [ $i -gt 100 ] && fail "proxy did not start"; sleep 0.1; done
  PURL=http://127.0.0.1:$(cat "$T/proxy.port")
}
S=halfway # the overrun sample again, under another id: ~60 batches of 4 KiB
"$NF" record -o "$T/$S" "$SRC/samples/overrun.nfs" > /dev/null || fail "record $S"
start_proxy hang 10
"$NF" push "$T/$S" --clickhouse "$PURL" --batch-bytes 4096 > /dev/null 2>&1 &
PUSHPID=$!
i=0
until [ -f "$T/marker" ]; do i=$((i + 1)); [ $i -gt 300 ] && fail "the push never reached its 10th batch"; sleep 0.1; done
kill -9 $PUSHPID; wait $PUSHPID 2>/dev/null; PUSHPID=
kill -9 $PROXY; wait $PROXY 2>/dev/null; PROXY=
# the killed push's own staging tables hold what it loaded
staged=$(ch "SELECT sum(rows) FROM system.parts WHERE database = '$DB' AND active AND startsWith(table, '_stage_')")
[ -n "$staged" ] && [ "$staged" -gt 0 ] || fail "nothing was staged before the kill (the kill came too late to test anything): '$staged'"
nstage=$(ch "SELECT count() FROM system.tables WHERE database = '$DB' AND startsWith(name, '_stage_')")
[ "$(ch "SELECT count() FROM sessions WHERE session = '$S'")" = 0 ] || fail "a half-pushed session is listed"
[ "$(ch "SELECT count() FROM fence_ops WHERE session = '$S'")" = 0 ] || fail "a half-pushed session has live rows"
"$NF" push "$T/$S" --clickhouse "$URL" --quiet || fail "push after a killed push"
compare_counts $S
# a push that ends (here: well) drops its own staging tables; the killed one's stay
[ "$(ch "SELECT count() FROM system.tables WHERE database = '$DB' AND startsWith(name, '_stage_')")" = "$nstage" ] ||
  fail "the push left staging tables: $(ch "SELECT name FROM system.tables WHERE database = '$DB' AND startsWith(name, '_stage_')" | tr '\n' ' ')"

# 3b. two pushes of one session at once, in many small INSERTs over two
#     streams each: each loads its own staging tables, so the session ends
#     whole (exact counts) and listed once (with one shared staging partition,
#     one push's DROP PARTITION removed the other's staged rows, or both
#     pushes' rows were staged and swapped in doubled; with swaps not taking
#     turns, two REPLACE PARTITIONs at once from staged tables of many parts
#     left rows of both: 7 of 4 in CI)
for i in 1 2 3 4 5 6 7 8; do
  "$NF" push "$T/$S" --clickhouse "$URL" --batch-bytes 4096 --quiet & P1=$!
  "$NF" push "$T/$S" --clickhouse "$URL" --batch-bytes 4096 --quiet & P2=$!
  PUSHPID="$P1 $P2"
  wait $P1 || fail "concurrent push 1 (round $i)"
  wait $P2 || fail "concurrent push 2 (round $i)"
  PUSHPID=
  compare_counts $S
done
# one stream: the same rows
"$NF" push "$T/$S" --clickhouse "$URL" --streams 1 --quiet || fail "push --streams 1"
compare_counts $S
"$NF" push "$T/$S" --clickhouse "$URL" --streams 0 > "$T/out" 2> "$T/err"; rc=$?
[ $rc = 2 ] && grep -q -- "--streams" "$T/err" || fail "--streams 0: exit $rc: $(cat "$T/err")"

# 3c. the swaps take turns: while `_lock_<session>` is held (here by hand) a push
#     loads its staging tables and waits, the live version stays; the push ends
#     once the lock is gone, and drops nothing of another's
pushed_at() { ch "SELECT toUInt32(pushed_at) FROM sessions WHERE session = '$S'"; }
staged_sessions_rows() {
  ch "SELECT sum(rows) FROM system.parts WHERE database = '$DB' AND active AND startsWith(table, '_stage_') AND endsWith(table, '_sessions')"
}
p0=$(pushed_at)
ch "CREATE TABLE \`_lock_$S\` (holder String) ENGINE = Memory" > /dev/null || fail "could not take the lock by hand"
sleep 1.1 # pushed_at has seconds
"$NF" push "$T/$S" --clickhouse "$URL" --batch-bytes 4096 --quiet & PUSHPID=$!
i=0
until [ "$(staged_sessions_rows)" = 1 ]; do
  i=$((i + 1)); [ $i -gt 600 ] && fail "the push never staged its sessions row"
  kill -0 $PUSHPID 2>/dev/null || fail "the push ended while another held the lock"
  sleep 0.1
done
sleep 0.5
kill -0 $PUSHPID 2>/dev/null || fail "the push swapped while another held the lock"
[ "$(pushed_at)" = "$p0" ] || fail "the live version changed while another held the lock"
compare_counts $S
ch "DROP TABLE \`_lock_$S\`" > /dev/null
wait $PUSHPID || fail "the push that waited for the lock failed"
PUSHPID=
[ "$(pushed_at)" != "$p0" ] || fail "the push that waited for the lock did not swap"
compare_counts $S
# a lock left by a push killed during its swap is taken over once it is stale
ch "CREATE TABLE \`_lock_$S\` (holder String) ENGINE = Memory" > /dev/null || fail "could not take the lock by hand"
sleep 2.1
NFTRACE_PUSH_LOCK_STALE_S=1 "$NF" push "$T/$S" --clickhouse "$URL" --quiet || fail "push over a stale lock"
[ "$(ch "SELECT count() FROM system.tables WHERE database = '$DB' AND startsWith(name, '_lock_')")" = 0 ] ||
  fail "locks left: $(ch "SELECT name FROM system.tables WHERE database = '$DB' AND startsWith(name, '_lock_')" | tr '\n' ' ')"
compare_counts $S

# 4. the server goes away mid-push (connection dropped at the 10th batch): one
#    line naming the session and the URL, exit 1; the previous version stays whole
start_proxy drop 10
"$NF" push "$T/$S" --clickhouse "$PURL" --batch-bytes 4096 > "$T/out" 2> "$T/err"
rc=$?
wait $PROXY 2>/dev/null; PROXY=
[ $rc = 1 ] || fail "server gone mid-push: exit $rc, want 1"
[ "$(wc -l < "$T/err")" = 1 ] || fail "server gone mid-push: want one line, got: $(cat "$T/err")"
grep -q "$S" "$T/err" && grep -q "$PURL" "$T/err" || fail "error does not name the session and URL: $(cat "$T/err")"
compare_counts $S

# 5. bad input: unreachable URL, an HTTP error from the server, a directory that is no session
"$NF" push "$T/$S" --clickhouse "$PURL" > "$T/out" 2> "$T/err"; rc=$?
[ $rc = 1 ] && [ "$(wc -l < "$T/err")" = 1 ] && grep -q "$PURL" "$T/err" || fail "unreachable URL: exit $rc: $(cat "$T/err")"
"$NF" query --clickhouse "$URL" "SELECT nosuchcolumn FROM sessions" > "$T/out" 2> "$T/err"; rc=$?
[ $rc = 1 ] && [ "$(wc -l < "$T/err")" = 1 ] && grep -q "HTTP" "$T/err" || fail "server error: exit $rc: $(cat "$T/err")"
# an error the server meets after its first rows (division by zero at row 300000,
# blocks of 1000 rows): one line, exit 1, and no partial answer on stdout (without
# the server holding the answer to the end, rows then the error's text came out
# with exit 0)
"$NF" query --clickhouse "$URL" --csv "SELECT number, intDiv(1, number - 300000) FROM system.numbers LIMIT 400000 SETTINGS max_block_size = 1000" > "$T/out" 2> "$T/err"; rc=$?
[ $rc = 1 ] && [ "$(wc -l < "$T/err")" = 1 ] && grep -q "Division by zero" "$T/err" || fail "late server error: exit $rc: $(head -c 300 "$T/err")"
[ ! -s "$T/out" ] || fail "late server error: a partial answer was written ($(wc -l < "$T/out") lines)"
# and the same query without the error streams all its rows
"$NF" query --clickhouse "$URL" --csv "SELECT number, intDiv(1, number - 500000) FROM system.numbers LIMIT 400000 SETTINGS max_block_size = 1000" > "$T/out" || fail "query of 400000 rows"
[ "$(wc -l < "$T/out")" = 400001 ] || fail "query of 400000 rows: $(wc -l < "$T/out") lines"
mkdir "$T/notasession"
"$NF" push "$T/notasession" --clickhouse "$URL" > "$T/out" 2> "$T/err"; rc=$?
[ $rc = 1 ] && [ "$(wc -l < "$T/err")" = 1 ] && grep -q notasession "$T/err" || fail "not a session: exit $rc: $(cat "$T/err")"
[ "$(ch "SELECT count() FROM sessions WHERE session = 'notasession'")" = 0 ] || fail "a non-session was listed"

# 6. query --json: one object per line
"$NF" query --clickhouse "$URL" --json "SELECT session, rows FROM sessions ORDER BY session" > "$T/out" || fail "query --json"
[ "$(wc -l < "$T/out")" = 4 ] && python3 -c 'import json,sys; assert all(isinstance(json.loads(l)["rows"], int) for l in open(sys.argv[1]))' "$T/out" || fail "query --json: $(cat "$T/out")"

# 7. the guide's (docs/GUIDE.md) cross-session queries give SQLite's numbers over the same sessions
"$NF" record -o "$T/hang-never-signaled" "$SRC/samples/hang-never-signaled.nfs" > /dev/null || fail "record hang"
"$NF" push "$T/hang-never-signaled" --clickhouse "$URL" --quiet || fail "push hang-never-signaled"
ALL="$T/stall-chain $T/overrun $T/$S $T/hang-never-signaled $T/imported"
[ "$(ch "SELECT count() FROM sessions")" = 5 ] || fail "want 5 sessions listed"
readme_queries() { # SESSION_DIR...
for q in p99 lost hangs; do
  awk -v m="<!-- fleet-query: $q -->" '$0 == m { f = 1; next } f && /^```sql/ { g = 1; next } g && /^```/ { exit } g' \
    "$SRC/docs/GUIDE.md" > "$T/$q.sql"
  [ -s "$T/$q.sql" ] || fail "README has no fleet-query $q"
  "$NF" query --clickhouse "$URL" --database $DB --csv -f "$T/$q.sql" > "$T/$q.ch" || fail "README query $q: $(cat "$T/$q.ch")"
  tail -n +2 "$T/$q.ch" > "$T/$q.got"
  python3 "$SRC/tests/push/fleet_expect.py" $q "$@" > "$T/$q.want" || fail "fleet_expect $q"
  [ "$(wc -l < "$T/$q.want")" -ge 1 ] && [ -s "$T/$q.want" ] || fail "README query $q: SQLite gives no rows to compare"
  diff -u "$T/$q.want" "$T/$q.got" || fail "README query $q ($DB): ClickHouse differs from SQLite (- SQLite, + ClickHouse)"
done
}
readme_queries $ALL

# 7b. the guide's diff query (builds 'base' and 'change', one session each) gives
#     `nftrace diff`'s numbers: n, p50, p90, p99 and max of the stall per queue name
"$NF" record -o "$T/base-1" --seed 1 "$SRC/tests/diff/jitter.nfs" > /dev/null || fail "record base-1"
"$NF" record -o "$T/change-1" --seed 2 "$SRC/tests/diff/jitter.nfs" > /dev/null || fail "record change-1"
"$NF" push "$T/base-1" "$T/change-1" --clickhouse "$URL" --quiet || fail "push base-1 change-1"
awk -v m="<!-- fleet-query: diff -->" '$0 == m { f = 1; next } f && /^```sql/ { g = 1; next } g && /^```/ { exit } g' \
  "$SRC/docs/GUIDE.md" > "$T/diff.sql"
[ -s "$T/diff.sql" ] || fail "README has no fleet-query diff"
"$NF" query --clickhouse "$URL" --database $DB --csv -f "$T/diff.sql" > "$T/diff.ch" || fail "README query diff: $(cat "$T/diff.ch")"
tail -n +2 "$T/diff.ch" | cut -d, -f1-11 > "$T/diff.got"
"$NF" diff "$T/base-1" "$T/change-1" --csv > "$T/diff.csv" || fail "nftrace diff base-1 change-1"
python3 - "$T/diff.csv" > "$T/diff.want" <<'PY' || fail "reading nftrace diff --csv"
import csv, sys
stats = {}
for r in csv.DictReader(open(sys.argv[1], newline="")):
    if r["kind"] == "series" and r["metric"] == "stall" and r["scope"] == "queue" and r["a"] and r["b"]:
        stats.setdefault(r["name"], {})[r["stat"]] = (r["a"], r["b"])
for q in sorted(stats):
    s = stats[q]
    print(",".join(['"%s"' % q] + [v for k in ("n", "p50", "p90", "p99", "max") for v in s[k]]))
PY
[ "$(wc -l < "$T/diff.want")" -ge 2 ] || fail "nftrace diff gives fewer than two queues to compare: $(cat "$T/diff.want")"
diff -u "$T/diff.want" "$T/diff.got" || fail "README query diff: ClickHouse differs from nftrace diff (- diff, + ClickHouse)"

# 9. the hostile-string set (tests/hostile.h) as queue names: pushed as data (the
#    bytes as they were), shown by query --clickhouse cleaned (no raw ESC, OSC, CR,
#    BS, C1 or stray byte in the table, CSV or JSON), as for a session
HP="$(dirname "$NF")/nf_hostile_prog"
if [ -x "$HP" ]; then
  "$NF" record -o "$T/hostile" -- "$HP" hostile-names > /dev/null || fail "record hostile"
  "$NF" push "$T/hostile" --clickhouse "$URL" --database hostile --quiet || fail "push hostile"
  got=$("$NF" query --clickhouse "$URL" --database hostile --csv "SELECT countIf(position(name, unhex('1B')) > 0), \
    countIf(position(name, unhex('FF')) > 0), countIf(position(name, unhex('C29B')) > 0) FROM queues" | tail -n 1)
  # ESC in 2 names (CSI, OSC), 0xFF in 1 (invalid bytes), U+009B in 1 (C1 CSI)
  [ "$got" = "2,1,1" ] || fail "hostile names not stored as data: $got"
  for f in --table --csv --json; do
    "$NF" query --clickhouse "$URL" --database hostile $f "SELECT queue, name FROM queues ORDER BY queue" > "$T/hostile$f" \
      || fail "query hostile $f"
  done
  python3 "$SRC/tests/cli/hostile_check.py" text "$T/hostile--table" "$T/hostile--csv" || fail "hostile names reach the terminal raw"
  python3 "$SRC/tests/cli/hostile_check.py" jsonl "$T/hostile--json" || fail "hostile names: query --json"
else
  echo "note: $HP not built: the hostile-string push not tried"
fi

# 8. the two-shard cluster: local tables on each shard, Distributed tables over them
start_server "$T/s2" "$URL2"
"$NF" push "$T/stall-chain" --cluster nf --clickhouse "$URL" --database fleet > "$T/out" 2> "$T/err"; rc=$?
[ $rc = 1 ] && [ "$(wc -l < "$T/err")" = 1 ] && grep -q "2 shards" "$T/err" || fail "one URL for two shards: exit $rc: $(cat "$T/err")"
# run-3 and overrun-2 hash to shard 1, the others to shard 2 (cityHash64(session) % 2)
"$NF" record -o "$T/run-3" "$SRC/samples/stall-chain.nfs" > /dev/null || fail "record run-3"
"$NF" record -o "$T/overrun-2" "$SRC/samples/overrun.nfs" --seed 7 > /dev/null || fail "record overrun-2"
CL="$ALL $T/run-3 $T/overrun-2"
"$NF" push $CL --cluster nf --clickhouse "$URL" --clickhouse "$URL2" --database fleet --quiet || fail "cluster push"
"$NF" push "$T/overrun" "$T/overrun-2" --cluster nf --clickhouse "$URL" --clickhouse "$URL2" --database fleet --quiet || fail "cluster push again"
DB=fleet
n1=$("$NF" query --clickhouse "$URL" --database fleet --csv "SELECT count() FROM sessions_local" | tail -n 1)
n2=$("$NF" query --clickhouse "$URL2" --database fleet --csv "SELECT count() FROM sessions_local" | tail -n 1)
[ "$n1" -ge 1 ] && [ "$n2" -ge 1 ] && [ $((n1 + n2)) = 7 ] || fail "cluster: shards hold $n1 and $n2 sessions, want 7 spread over both"
for s in stall-chain overrun halfway run-3 overrun-2 imported; do compare_counts $s; done
readme_queries $CL
DB=nftrace
stop_server
echo "PASS"

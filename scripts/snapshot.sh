#!/usr/bin/env bash
# snapshot.sh NFTRACE OUT: every answer an nftrace binary gives on the bundled
# samples, the kernel fixtures and the real captures of ../shared/real-traces
# (when present), written under OUT so that two binaries can be compared with
# `diff -r OUT1 OUT2` (a restructuring must leave it empty, or explain each
# difference). Per input: the sorted dump of every table of its timeline
# (meta's build_id left out: it names the build), `check --json`, the PNG,
# SVG and HTML report and the Perfetto and Chrome JSON exports.
# Sessions are made under OUT/sessions (deterministic recordings: seed 1).
set -euo pipefail
nft=$(realpath "$1")
out=$2
src=$(cd "$(dirname "$0")/.." && pwd)
shared=$src/../shared/real-traces
mkdir -p "$out/sessions"
out=$(realpath "$out")
cd "$out" # sessions are named relative to OUT: reports that print their path agree

dump() { # dump DB FILE: every table, its rows sorted
  local db=$1 f=$2 t
  : > "$f"
  for t in $(sqlite3 "$db" "select name from sqlite_master where type='table' order by name"); do
    echo "== $t" >> "$f"
    if [[ $t == meta ]]; then
      sqlite3 -cmd '.mode quote' "$db" "select * from meta where key <> 'build_id'" | LC_ALL=C sort >> "$f"
    else
      sqlite3 -cmd '.mode quote' "$db" "select * from \"$t\"" | LC_ALL=C sort >> "$f"
    fi
  done
}

answers() { # answers NAME SESSION (relative to OUT)
  local s=$2 o=$out/$1
  mkdir -p "$o"
  "$nft" check --json "$s" > "$o/check.json" 2>&1 || true
  "$nft" report "$s" -o "$o/report.png" > /dev/null 2>&1 || echo "report png failed" > "$o/report.png.err"
  "$nft" report "$s" -o "$o/report.svg" > /dev/null 2>&1 || echo "report svg failed" > "$o/report.svg.err"
  "$nft" report "$s" -o "$o/report.html" > /dev/null 2>&1 || echo "report html failed" > "$o/report.html.err"
  "$nft" export "$s" -o "$o/export.perfetto" --format perfetto > /dev/null 2>&1 || echo "export failed" > "$o/export.err"
  "$nft" export "$s" -o "$o/export.json" --format chrome-json > /dev/null 2>&1 || echo "export failed" > "$o/export.json.err"
  dump "$s/.timeline.db" "$o/tables.txt"
}

for f in "$src"/samples/*.nfs; do
  n=$(basename "$f" .nfs)
  "$nft" record --force --ground-truth --seed 1 -o "sessions/$n" "$f" > /dev/null
  answers "$n" "sessions/$n"
done
for f in "$src"/samples/kernel/*.dat; do
  n=kernel-$(basename "$f" .dat)
  "$nft" import --force "$f" -o "sessions/$n" > /dev/null
  answers "$n" "sessions/$n"
done
if [[ -d $shared ]]; then
  for f in "$shared"/*.dat "$shared"/*.etl; do
    n=real-$(basename "$f")
    "$nft" import --force "$f" -o "sessions/$n" > /dev/null
    answers "$n" "sessions/$n"
  done
else
  echo "snapshot.sh: $shared absent: real captures left out" >&2
fi
echo "snapshot.sh: answers of $nft under $out"

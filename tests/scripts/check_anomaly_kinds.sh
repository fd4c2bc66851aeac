#!/usr/bin/env bash
# check_anomaly_kinds.sh SOURCE_DIR: the finding and anomaly kind names have
# one source, schemas/anomalies.def (C code takes them from core's
# anomaly_kinds.h). This checks the readers that cannot include it: the list
# in schemas/timeline.sql's anomalies.kind comment is exactly the kinds the
# timeline writes, and every kind named in schemas/timeline-views.sql and in
# html/report.html's anomaly drawing is one of them.
set -euo pipefail
cd "$1"
def=schemas/anomalies.def
fail=0
# Kinds the timeline writes: findings with row = 1, and every NF_ANOMALY.
kinds=$( { sed -n 's/^NF_FINDING([A-Z_]*, "\([a-z_]*\)", [01], 1,.*/\1/p' "$def"
	   sed -n 's/^NF_ANOMALY([A-Z_]*, "\([a-z_]*\)",.*/\1/p' "$def"; } | sort)
[ -n "$kinds" ] || { echo "$def: no kinds found"; exit 1; }
# timeline.sql: the kind column's comment lists them all, and nothing else.
listed=$(awk '/^CREATE TABLE anomalies/ { t = 1 } t && /^  kind/ { print; exit }' schemas/timeline.sql |
	 grep -o "'[a-z_]*'" | tr -d "'" | sort)
if [ "$listed" != "$kinds" ]; then
	echo "schemas/timeline.sql: anomalies.kind lists [$(echo $listed)], $def has [$(echo $kinds)]"
	fail=1
fi
# Readers: every kind they name exists.
check_names() { # FILE NAMES...
	local f=$1 n
	shift
	for n in "$@"; do
		grep -qx "$n" <<<"$kinds" || { echo "$f: names anomaly kind '$n', not in $def"; fail=1; }
	done
}
check_names schemas/timeline-views.sql $(grep -o "kind = '[a-z_]*'" schemas/timeline-views.sql | sed "s/.*'\(.*\)'/\1/")
check_names html/report.html $(grep -o "a\[0\] [!=]== '[a-z_]*'" html/report.html | sed "s/.*'\(.*\)'/\1/")
[ "$fail" = 0 ] && echo "anomaly kinds: timeline.sql, timeline-views.sql and report.html agree with $def"
exit "$fail"

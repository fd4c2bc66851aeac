#!/bin/sh
# Compares etl/'s counts per (provider, id, version) with an independent
# reading (etl_count.py) on every real capture present: the gpuvis capture and
# the public ETL files. Skips (exit 77) when ../shared/real-traces is absent.
# Usage: compare_counts.sh NF_ETL_DUMP PYTHON SOURCE_DIR
set -u
dump=$1 py=$2 src=$3
real="$src/../shared/real-traces"
if [ ! -f "$real/gpuvis-windows.etl" ]; then
	echo "SKIP: $real/gpuvis-windows.etl is absent (real captures are not part of the project)"
	exit 77
fi
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
status=0
for f in "$real/gpuvis-windows.etl" "$real"/public-etl/*.etl; do
	[ -f "$f" ] || continue
	if ! "$py" "$src/tests/etl/etl_count.py" "$f" | sort > "$tmp/py"; then
		echo "FAIL: etl_count.py could not read $f"; status=1; continue
	fi
	if ! "$dump" --counts --file-order "$f" | sort > "$tmp/c1"; then
		echo "FAIL: nf-etl-dump could not read $f"; status=1; continue
	fi
	if ! "$dump" --counts "$f" | sort > "$tmp/c2"; then
		echo "FAIL: nf-etl-dump (time order) could not read $f"; status=1; continue
	fi
	n=$(awk -F'\t' '{s += $4} END {print s + 0}' "$tmp/py")
	if ! diff -u "$tmp/py" "$tmp/c1"; then
		echo "FAIL: $f: counts differ (- independent reading, + etl/ in file order)"; status=1
	elif ! diff -u "$tmp/c1" "$tmp/c2"; then
		echo "FAIL: $f: counts differ between file order and time order"; status=1
	elif [ "$n" -eq 0 ]; then
		echo "FAIL: $f: no records counted"; status=1
	else
		echo "ok: $f: $(wc -l < "$tmp/py") (provider, id, version) keys, $n records, equal"
	fi
done
exit $status

#!/usr/bin/env bash
# The longer fuzzing campaign: builds the libFuzzer targets, one per decoder
# of outside input (tests/fuzz/fuzz_{logreplay,ctf,scenario,duration,builder}.c,
# the escaping helpers, fuzz_escape.c, the trace.dat import,
# tests/kernel/fuzz_import.c, ftrace text, fuzz_text (the same file), and the ETL reader, tests/etl/fuzz_etl.c), with clang (-DNF_FUZZ=ON,
# ASan+UBSan) in build-fuzz/ and runs each one for a while. New inputs go to
# out/fuzz/<target>/ (the seed corpus, tests/fuzz/corpus/<target>/ or
# tests/kernel/corpus/import/, is read, never written); crashes, leaks and
# timeouts go to out/fuzz/crashes/ and stop that target.
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]
#     (default 300 s; targets logreplay ctf scenario duration builder escape import text etl)
# Replay one crash:  build-fuzz/tests/fuzz/fuzz_<target> out/fuzz/crashes/<target>-crash-...
#   (the import target is build-fuzz/tests/kernel/fuzz_import, etl build-fuzz/tests/etl/fuzz_etl)
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-300}"
shift || true
targets="${*:-logreplay ctf scenario duration builder escape import text etl}"
build="${NF_FUZZ_BUILD:-build-fuzz}"

CC=clang cmake -S . -B "$build" -DNF_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
for t in $targets; do
	cmake --build "$build" -j"${NF_FUZZ_JOBS:-$(nproc)}" --target "fuzz_$t" >/dev/null
done
mkdir -p out/fuzz/crashes
status=0
for t in $targets; do
	# where each target's binary, seed corpus and leak suppressions live
	case $t in
	import) dir=tests/kernel corpus=tests/kernel/corpus/import supp=tests/kernel/lsan.supp ;;
	text) dir=tests/kernel corpus=tests/kernel/corpus/text supp=tests/kernel/lsan.supp ;;
	etl) dir=tests/etl corpus=tests/etl/corpus/etl supp=tests/lsan.supp ;;
	*) dir=tests/fuzz corpus="tests/fuzz/corpus/$t" supp=tests/lsan.supp ;;
	esac
	mkdir -p "out/fuzz/$t"
	echo "== fuzz_$t for ${secs}s"
	LSAN_OPTIONS="suppressions=$PWD/$supp:print_suppressions=0" \
	ASAN_OPTIONS="fast_unwind_on_malloc=0" \
	UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1" \
	"$build/$dir/fuzz_$t" -max_total_time="$secs" -timeout=30 -rss_limit_mb=2048 \
		-print_final_stats=1 -artifact_prefix="out/fuzz/crashes/$t-" \
		"out/fuzz/$t" "$corpus" 2>"out/fuzz/$t.log" || {
		status=1
		echo "fuzz_$t found a problem: out/fuzz/$t.log, out/fuzz/crashes/$t-*" >&2
	}
	grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb|#[0-9]+ +DONE)' "out/fuzz/$t.log" || tail -3 "out/fuzz/$t.log"
done
exit $status

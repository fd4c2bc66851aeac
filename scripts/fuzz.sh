#!/usr/bin/env bash
# The longer fuzzing campaign: builds the libFuzzer targets of tests/fuzz with
# clang (-DNF_FUZZ=ON, ASan+UBSan) in build-fuzz/ and runs each one for a
# while. New inputs go to out/fuzz/<target>/ (the seed corpus in
# tests/fuzz/corpus/<target>/ is read, never written); crashes, leaks and
# timeouts go to out/fuzz/crashes/ and stop that target.
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]   (default 300; logreplay ctf scenario duration)
# Replay one crash:  build-fuzz/tests/fuzz/fuzz_<target> out/fuzz/crashes/crash-...
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-300}"
shift || true
targets="${*:-logreplay ctf scenario duration}"
build="${NF_FUZZ_BUILD:-build-fuzz}"

CC=clang cmake -S . -B "$build" -DNF_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
for t in $targets; do
	cmake --build "$build" -j"$(nproc)" --target "fuzz_$t" >/dev/null
done
mkdir -p out/fuzz/crashes
status=0
for t in $targets; do
	mkdir -p "out/fuzz/$t"
	echo "== fuzz_$t for ${secs}s"
	LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp:print_suppressions=0" \
	ASAN_OPTIONS="fast_unwind_on_malloc=0" \
	"$build/tests/fuzz/fuzz_$t" -max_total_time="$secs" -timeout=30 -rss_limit_mb=2048 \
		-print_final_stats=1 -artifact_prefix="out/fuzz/crashes/$t-" \
		"out/fuzz/$t" "tests/fuzz/corpus/$t" 2>"out/fuzz/$t.log" || {
		status=1
		echo "fuzz_$t found a problem: out/fuzz/$t.log, out/fuzz/crashes/$t-*" >&2
	}
	grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb|#[0-9]+ +DONE)' "out/fuzz/$t.log" || tail -3 "out/fuzz/$t.log"
done
exit $status

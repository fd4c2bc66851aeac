#!/usr/bin/env bash
# Every test: install what is missing, build with warnings as errors, run the
# whole suite with ctest, then again under AddressSanitizer + UBSan, then the
# threaded engine and analyzer tests under ThreadSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
# Test-only: headless Chromium for test_chromium (the report's SVG in a browser;
# about 25 s to install; without it that test is skipped with a message).
if [ ! -x /usr/bin/chromium ]; then
  echo "test.sh: installing chromium for test_chromium" >&2
  sudo_=""; [ "$(id -u)" -ne 0 ] && sudo_="sudo"
  { $sudo_ apt-get update -qq && $sudo_ env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq --no-install-recommends chromium >/dev/null; } ||
    echo "test.sh: chromium could not be installed; test_chromium will be skipped" >&2
fi
# tests/kernel records live kernel events when tracefs is mounted (skipped with a
# message otherwise); mount it where the machine allows (we run as root in CI).
if [ -d /sys/kernel/tracing ] && [ ! -e /sys/kernel/tracing/instances ]; then
  mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null ||
    echo "test.sh: tracefs could not be mounted; live kernel tests will be skipped" >&2
fi
jobs="$(nproc)"

echo "== build (warnings are errors) and test"
cmake -S . -B build-ci -DNF_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build-ci -j"$jobs"
(cd build-ci && ctest --output-on-failure -j"$jobs")

echo "== AddressSanitizer + UndefinedBehaviorSanitizer build and test"
# -O1, as AddressSanitizer's authors advise (asserts stay on): half the time of -O0.
cmake -S . -B build-asan -DNF_WERROR=ON -DNF_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_C_FLAGS_DEBUG="-g -O1" >/dev/null
cmake --build build-asan -j"$jobs"
# check's per-case timeouts are hang guards, not speed limits: sanitizers make the
# heavy cases 3-10x slower, so they get 4x the time (ctest's own TIMEOUT still bounds each).
# The Chromium tests drive the page's script in a browser: what nftrace writes for them
# runs under the sanitizers in test_html and test_hostile*, the browser's part needs none.
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 CK_TIMEOUT_MULTIPLIER=4 \
  ctest --output-on-failure -j"$jobs" -E '^(test_html_chromium|test_html_chromium_real|test_chromium)$')

echo "== ThreadSanitizer build: the threaded engine, the analyzer's threads, the export's reader thread, the push's streams, the diff's two readers, the engine's display blanks (test_frames) and the first picture's two halves (any report fails the test)"
cmake -S . -B build-tsan -DNF_WERROR=ON -DNF_TSAN=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build build-tsan -j"$jobs" --target test_threaded test_runtime_end test_builder test_sessions test_export test_diff test_frames test_first_picture nf_diff_hostile nf-make-tracedat nftrace
(cd build-tsan && TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 CK_TIMEOUT_MULTIPLIER=4 NF_FIRST_PICTURE_CASES=4 \
  ctest --output-on-failure -R '^(test_threaded|test_runtime_end|test_builder|test_sessions|test_export|test_export_perfetto|test_export_real|test_push|test_diff|test_frames|test_first_picture)$')

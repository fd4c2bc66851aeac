#!/usr/bin/env bash
# Every test: install what is missing, build with warnings as errors, run the
# whole suite with ctest, then again under AddressSanitizer + UBSan, then the
# threaded engine tests under ThreadSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
jobs="$(nproc)"

echo "== build (warnings are errors) and test"
cmake -S . -B build-ci -DNF_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build-ci -j"$jobs"
(cd build-ci && ctest --output-on-failure -j"$jobs")

echo "== AddressSanitizer + UndefinedBehaviorSanitizer build and test"
cmake -S . -B build-asan -DNF_WERROR=ON -DNF_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build build-asan -j"$jobs"
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --output-on-failure -j"$jobs")

echo "== ThreadSanitizer build, threaded engine tests only (any report fails the test)"
cmake -S . -B build-tsan -DNF_WERROR=ON -DNF_TSAN=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build build-tsan -j"$jobs" --target test_threaded nftrace
(cd build-tsan && TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
  ctest --output-on-failure -R '^test_threaded$')

#!/usr/bin/env bash
# Benchmarks: install what is missing, build Release, run every stage, print
# the table. Not part of the test suite. See bench/README.md.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build-bench -j"$(nproc)"
exec bash bench/run.sh build-bench

#!/usr/bin/env bash
# The main job on a bundled sample: install what is missing, build, record the
# design document's log-buffer example, render it to PNG and SVG, and query it.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" >/dev/null

mkdir -p out
./build/nftrace record --force --ground-truth -o out/log-buffer-example samples/log-buffer-example.nfs
./build/nftrace report out/log-buffer-example -o out/log-buffer-example.png
./build/nftrace report out/log-buffer-example -o out/log-buffer-example.svg
echo "wrote out/log-buffer-example.png and out/log-buffer-example.svg"
./build/nftrace query out/log-buffer-example \
  "select id, queue, op, fence, value, queued_ns, observed_ns, end_ns, status from fence_ops order by id"

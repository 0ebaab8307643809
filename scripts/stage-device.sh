#!/usr/bin/env bash
# Copies the built binaries and kernel headers into .device/ (ignored by git)
# so they can travel to the GPU machine (build here, run there).
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf .device && mkdir -p .device/tests
cp -r build/include .device/include
strip -o .device/assay build/assay
strip -o .device/assay-worker build/assay-worker
for b in assay_bench_speed assay_bench_isolation; do [ -f build/$b ] && strip -o .device/$b build/$b; done
for t in assay_gpu_tests assay_tests; do
  [ -f build/tests/$t ] && strip -o .device/tests/$t build/tests/$t
done
du -sh .device

#!/usr/bin/env bash
# Builds and runs the test suite. GPU tests (label `gpu`) report "skipped"
# with a message where no CUDA GPU is present.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
# CTest does not print a skipped test's output: say here why GPU tests skip.
build/tests/assay_gpu_tests --list-test-names-only 2>&1 | grep '^SKIPPED' || true
ctest --test-dir build --output-on-failure -j "$(nproc)" "$@"

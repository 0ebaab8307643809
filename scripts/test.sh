#!/usr/bin/env bash
# Builds and runs the test suite. GPU tests (label `gpu`) report "skipped"
# with a message where no CUDA GPU is present.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
status=0
ctest --test-dir build --output-on-failure "$@" || status=$?
# CTest does not print a skipped test's output: show why the GPU tests skipped.
grep -h "^SKIPPED" build/Testing/Temporary/LastTest.log 2>/dev/null || true
exit $status

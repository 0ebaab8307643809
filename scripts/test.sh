#!/usr/bin/env bash
# Builds and runs the test suite. GPU tests (label `gpu`) report "skipped"
# with a message where no CUDA GPU is present.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
ctest --test-dir build --output-on-failure "$@"

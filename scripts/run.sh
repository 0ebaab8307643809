#!/usr/bin/env bash
# The main job: `assay check` over the bundled sample kernels, on the GPU
# where there is one, otherwise on the host backend. Succeeds when every
# sample gets the verdict its spec expects (correct kernels pass, each planted
# bug is caught as its class). Reports land in assay-out/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
mkdir -p assay-out
build/assay check generated_kernels/gemm generated_kernels/softmax generated_kernels/custom generated_kernels/hostile/host \
  --backend auto --expect \
  --json assay-out/report.json --junit assay-out/junit.xml "$@"

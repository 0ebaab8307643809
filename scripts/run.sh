#!/usr/bin/env bash
# The main job: `assay check` over the bundled sample kernels, on the GPU
# where there is one, otherwise on the host backend. Succeeds when every
# sample gets the verdict its spec expects (correct kernels pass, each planted
# bug is caught as its class). Reports land in assay-out/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
mkdir -p assay-out
# Every op family's samples (each folder of generated_kernels/ but needle and
# bench, assay bench's cheats,
# the fuzzing benchmark's); hostile kernels on the host backend only here,
# since the gate's GPU run of them is scripts/gpu-zoo.sh's.
families=()
for d in generated_kernels/*/; do
  f=$(basename "$d")
  case $f in needle | bench) ;; hostile) families+=("$d"host) ;; *) families+=("$d") ;; esac
done
build/assay check "${families[@]}" \
  --backend auto --expect \
  --json assay-out/report.json --junit assay-out/junit.xml "$@"

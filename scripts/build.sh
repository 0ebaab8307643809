#!/usr/bin/env bash
# Configures and builds assay into ./build (CUDA code compiles without a GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
[ -d /usr/local/cuda/bin ] && export PATH="/usr/local/cuda/bin:$PATH"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$(nproc)"

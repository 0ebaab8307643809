#!/usr/bin/env bash
# Configures and builds assay into ./build (CUDA code compiles without a GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
[ -d /usr/local/cuda/bin ] && export PATH="/usr/local/cuda/bin:$PATH"
# ASSAY_DEBUG_INFO=0 (CI): the same -O2 code without -g, which takes a
# third of the compile time and nothing in the tests reads.
flags=()
if [ "${ASSAY_DEBUG_INFO:-1}" = 0 ]; then
  flags=(-DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -DNDEBUG" -DCMAKE_CUDA_FLAGS_RELWITHDEBINFO="-O2 -DNDEBUG")
fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${flags[@]}" >/dev/null
cmake --build build -j "$(nproc)"

#!/usr/bin/env bash
# Compiles bench/trace/cupti_trace.cpp into DIR/libassay_cupti_trace.so, with
# the toolkit's libcupti copied beside it (found through $ORIGIN), and
# bench/trace/sampler.cpp into DIR/libassay_sampler.so (the host stacks), so
# that DIR can travel to the GPU machine. Not part of the build: profiling aids.
#   scripts/build-cupti-trace.sh DIR
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:?usage: scripts/build-cupti-trace.sh DIR}
cuda=${CUDA_HOME:-/usr/local/cuda}
mkdir -p "$dir"
cupti=$(ls "$cuda"/lib64/libcupti.so.* 2>/dev/null | head -1 || true)
[ -n "$cupti" ] || { echo "build-cupti-trace: no libcupti under $cuda/lib64" >&2; exit 1; }
g++ -O2 -shared -fPIC -std=c++17 -I"$cuda/include" bench/trace/cupti_trace.cpp \
  -L"$cuda/lib64" -lcupti -Wl,-rpath,'$ORIGIN' -o "$dir/libassay_cupti_trace.so"
cp -L "$cupti" "$dir/"
g++ -O2 -shared -fPIC -std=c++17 bench/trace/sampler.cpp -o "$dir/libassay_sampler.so"
echo "build-cupti-trace: $dir/libassay_sampler.so"
echo "build-cupti-trace: $dir/libassay_cupti_trace.so"

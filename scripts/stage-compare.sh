#!/usr/bin/env bash
# Stages two builds for scripts/gpu-speed-compare.sh in one archive that a
# device call carries (a call carries 64 MiB with the tree; two staged builds
# are some 40): .device/stages.tar.xz, about 3 MB, holding
#   stages/new   this tree's build/, as scripts/stage-device.sh stages it;
#   stages/base  BASE_REV built in a worktree under build-base/ with
#                build/'s CUDA architectures (assay, the worker and the bench).
#   bash scripts/stage-compare.sh BASE_REV
# On the device: tar xJf .device/stages.tar.xz -C .device, then
#   bash scripts/gpu-speed-compare.sh .device/stages/base .device/stages/new OUT
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 1 ] || { echo "usage: $0 BASE_REV" >&2; exit 2; }
rev=$(git rev-parse --verify "$1^{commit}")
[ -x build/assay_bench_speed ] || { echo "build/ has no assay_bench_speed: run scripts/build.sh first" >&2; exit 2; }
[ -d /usr/local/cuda/bin ] && export PATH="/usr/local/cuda/bin:$PATH"
base=build-base/src
if [ -d "$base" ]; then git -C "$base" checkout -q --detach "$rev"; else git worktree add -q --detach "$base" "$rev"; fi
arch=$(sed -n 's/^CMAKE_CUDA_ARCHITECTURES:STRING=//p' build/CMakeCache.txt)
cmake -S "$base" -B "$base/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CUDA_ARCHITECTURES="$arch" \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -DNDEBUG" -DCMAKE_CUDA_FLAGS_RELWITHDEBINFO="-O2 -DNDEBUG" > /dev/null
cmake --build "$base/build" -j "$(nproc)" --target assay assay-worker assay_bench_speed
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/stages"
bash scripts/stage-device.sh > /dev/null && mv .device "$work/stages/new"
(cd "$base" && bash scripts/stage-device.sh > /dev/null) && mv "$base/.device" "$work/stages/base"
# Not run by the comparison: the isolation bench and the host tests.
rm -f "$work"/stages/*/assay_bench_isolation "$work"/stages/*/tests/assay_tests
mkdir -p .device && tar cJf .device/stages.tar.xz -C "$work" stages
du -h .device/stages.tar.xz

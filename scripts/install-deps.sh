#!/usr/bin/env bash
# Installs what assay needs from Debian's packages, only what is missing.
# Runs as root on a fresh machine (CI, a new GPU runner); a no-op afterwards.
set -euo pipefail

# chromium: the bench HTML report's test draws the page headless (tests/test_bench_html.cpp).
packages=(cmake ninja-build g++ clang libclang-rt-14-dev libeigen3-dev catch2 libfmt-dev libyaml-cpp-dev
          libcli11-dev nlohmann-json3-dev libdlpack-dev chromium)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done

# The CUDA toolkit (nvcc, cudart, cuBLAS): use the one installed under
# /usr/local/cuda when present, else Debian's (from the non-free component).
if ! command -v nvcc >/dev/null 2>&1 && [ ! -x /usr/local/cuda/bin/nvcc ]; then
  missing+=(nvidia-cuda-toolkit)
  if ! grep -rqs 'non-free' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    echo "install-deps: enabling Debian's contrib and non-free components for nvidia-cuda-toolkit"
    sed -i 's/^Components: main.*/Components: main contrib non-free non-free-firmware/' \
      /etc/apt/sources.list.d/debian.sources 2>/dev/null || true
  fi
fi

if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

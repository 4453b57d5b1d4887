#!/usr/bin/env bash
# Builds and runs scripts/cross-process-timing.cu: what a second process that launches the kernels costs the timing.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-build}
mkdir -p "$out"
nvcc -std=c++20 -O2 -arch=sm_90 -o "$out/cross-process-timing" scripts/cross-process-timing.cu -lcuda
"$out/cross-process-timing"

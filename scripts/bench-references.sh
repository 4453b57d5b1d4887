#!/usr/bin/env bash
# Builds tests/benchmarks/reference_bench.cu for the GPU present and runs it: the references against CUB and the
# device-to-device copy (docs/performance.md).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p build
nvcc -std=c++20 -O3 -arch=native -Iexercises/sum -Iexercises/minmax -Iexercises/transpose \
    tests/benchmarks/reference_bench.cu reference/sum.cu reference/minmax.cu reference/transpose.cu \
    -o build/reference_bench
build/reference_bench

#!/usr/bin/env bash
# What kernels that seem to hang cost the other processes on their GPU, as in a quiet round that opens while the last
# students are still graded (docs/performance-history.md): a probe of a small case's GPU work (many short kernels, each
# waited for; one pass over 256 MB) alone, then beside 1, 4 and 16 processes each keeping one block busy.
#   scripts/hang-beside.sh        figures to $OUT (default build/hang-beside)/figures.txt
set -u
cd "$(dirname "$0")/.."
out=$(realpath -m "${OUT:-build/hang-beside}")
mkdir -p "$out"
nvcc -O2 -o "$out/hang-beside" scripts/hang-beside.cu || exit 1
probe() { "$out/hang-beside" probe; }
{
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null
    echo "alone: $(probe)"; echo "alone: $(probe)"
    for spinners in 1 4 16; do
        pids=()
        for ((k = 0; k < spinners; ++k)); do
            "$out/hang-beside" spin 20 > "$out/spin-$k.txt" &
            pids+=($!)
        done
        for ((k = 0; k < spinners; ++k)); do   # every spinner's kernel launched
            until grep -q spinning "$out/spin-$k.txt" 2>/dev/null; do sleep 0.05; done
        done
        echo "beside $spinners: $(probe)"; echo "beside $spinners: $(probe)"
        kill "${pids[@]}" 2>/dev/null
        for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null; done
    done
} | tee "$out/figures.txt"

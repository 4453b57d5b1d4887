#!/usr/bin/env bash
# Fails, naming the files, where a tracked C++ or CUDA source differs from .clang-format's style (scripts/format.sh).
exec "$(dirname "$0")/format.sh" --check

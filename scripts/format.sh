#!/usr/bin/env bash
# Formats the tracked C++ and CUDA sources in place with the repository's .clang-format; with --check, changes
# nothing, names the files that differ and exits 1 if any does (scripts/check-format.sh). A folder whose tracked
# .clang-format says `DisableFormat: true` (student submissions whose exact text tests assert) is left out.
# CLANG_FORMAT names another binary; 14 (Debian 12) and 18 (Ubuntu 24.04) format alike.
set -euo pipefail
cd "$(dirname "$0")/.."

check=false
case "${1:-}" in
    "") ;;
    --check) check=true ;;
    *)
        echo "usage: scripts/format.sh [--check]" >&2
        exit 2
        ;;
esac

clang_format=${CLANG_FORMAT:-clang-format}
if ! command -v "$clang_format" >/dev/null; then
    echo "format: error: $clang_format not found: install clang-format (apt-get install clang-format)" >&2
    exit 2
fi
# A key this version does not know fails here once, rather than as a difference in every file.
if ! "$clang_format" --dump-config --assume-filename=x.cpp >/dev/null; then
    echo "format: error: $clang_format cannot read .clang-format" >&2
    exit 2
fi

left_out=()
while IFS= read -r -d '' config; do
    if grep -qE '^DisableFormat:[[:space:]]*true' "$config"; then
        left_out+=("$(dirname "$config")/")
    fi
done < <(git ls-files -z -- '*.clang-format')

files=()
while IFS= read -r -d '' file; do
    for folder in "${left_out[@]}"; do
        if [[ "$file" == "$folder"* ]]; then
            continue 2
        fi
    done
    files+=("$file")
done < <(git ls-files -z -- '*.cpp' '*.hpp' '*.cc' '*.h' '*.cu' '*.cuh')

if ! $check; then
    printf '%s\0' "${files[@]}" | xargs -0 -n 16 -P "$(nproc)" "$clang_format" -i
    echo "format: formatted ${#files[@]} files with $("$clang_format" --version)"
    exit 0
fi

# One file at a time, so that each one that differs is named once.
differing=$(printf '%s\0' "${files[@]}" | xargs -0 -n 1 -P "$(nproc)" sh -c \
    '"$0" --dry-run --Werror "$1" >/dev/null 2>&1 || printf "%s\n" "$1"' "$clang_format" | sort)
if [ -n "$differing" ]; then
    echo "format: these files differ from .clang-format's style ($("$clang_format" --version)):" >&2
    sed 's/^/  /' <<<"$differing" >&2
    echo "format: scripts/format.sh formats them in place" >&2
    exit 1
fi
echo "format: ${#files[@]} files match .clang-format (left out: ${left_out[*]:-nothing})"

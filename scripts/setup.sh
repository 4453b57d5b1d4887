#!/usr/bin/env bash
# Installs the packages cugrade needs and lacks (Debian 12, Ubuntu 24.04), builds cugrade, and grades the bundled
# student template. With --deps-only it stops after the packages.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(cmake make g++ pkg-config libyaml-cpp-dev libfmt-dev catch2 libcli11-dev nlohmann-json3-dev libarchive-dev libgit2-dev
          libboost-context-dev bubblewrap git python3 python3-yaml)
missing=()
for package in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$package")
    fi
done
if ((${#missing[@]} > 0)); then
    echo "cugrade setup: installing ${missing[*]}"
    sudo=""
    if [ "$(id -u)" -ne 0 ]; then
        sudo=sudo
    fi
    $sudo apt-get update -qq
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
    echo "cugrade setup: every package it needs is installed (${packages[*]})"
fi
if ! command -v nvcc >/dev/null && [ ! -x /usr/local/cuda/bin/nvcc ]; then
    echo "cugrade setup: error: nvcc not found; install the CUDA toolkit (12.x or 13.x) and put nvcc on PATH" >&2
    exit 1
fi
# The contract's arithmetic rule reads machine code with cuobjdump and nvdisasm, which a full toolkit has beside nvcc;
# a toolkit of nvcc alone (NVIDIA's Python wheels) gets them from the wheels of the same major release.
nvcc_dir="$(dirname "$(readlink -f "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")")"
if { [ ! -x "$nvcc_dir/cuobjdump" ] || [ ! -x "$nvcc_dir/nvdisasm" ]; } && command -v python3 >/dev/null &&
    [ -w "$nvcc_dir" ]; then
    major="$("$nvcc_dir/nvcc" --version | sed -n 's/.*release \([0-9]*\)\..*/\1/p')"
    wheels="$(mktemp -d)"
    echo "cugrade setup: installing cuobjdump and nvdisasm (CUDA $major) beside $nvcc_dir/nvcc"
    if python3 -m pip install -q --target "$wheels" "nvidia-cuda-cuobjdump==$major.*" "nvidia-cuda-nvdisasm==$major.*" \
        >/dev/null 2>&1; then
        find "$wheels" -type f \( -name cuobjdump -o -name nvdisasm \) -exec cp {} "$nvcc_dir/" \;
    else
        echo "cugrade setup: warning: no cuobjdump and nvdisasm: the contract's arithmetic rule is not checked here" >&2
    fi
    rm -rf "$wheels"
fi
if [ "${1:-}" = "--deps-only" ]; then
    exit 0
fi

cmake --preset default >/dev/null
cmake --build --preset default -j "$(nproc)"
echo
echo "cugrade setup: grading the bundled templates in student_template/ (they compute nothing yet)"
echo
status=0
build/grader/cugrade check student_template --no-cpu || status=$?
case $status in
    0 | 1) echo; echo "cugrade setup: the templates fail until their TODOs are written: see exercises/NAME/README.md" ;;
    77)
        echo; echo "cugrade setup: the templates built; this machine has no NVIDIA GPU to run them on."
        echo "cugrade setup: what check does here instead, a CPU self-check (docs/cpu-mode.md), of the sum template:"
        echo
        status=0
        build/grader/cugrade check student_template -e sum || status=$?
        case $status in
            1 | 77) ;;
            *) exit "$status" ;;
        esac
        ;;
    *) exit "$status" ;;
esac

# A student kit (cugrade handout) stops here: it has neither the fixture corpus nor the references.
if [ ! -d tests/fixtures ]; then
    echo; echo "cugrade setup: done. Grade your work with: build/grader/cugrade check path/to/your/folder"
    exit 0
fi

# A small class made from the fixture corpus, graded as an instructor grades one (docs/batch.md).
sample=build/sample-class
rm -rf "$sample" && mkdir -p "$sample"
for student in warp_shuffle seed_tree off_by_one compile_error; do
    mkdir -p "$sample/$student" && cp "tests/fixtures/sum/$student/sum.cu" "$sample/$student/"
done
echo
echo "cugrade setup: grading a sample class of four students ($sample) with cugrade grade"
status=0
build/grader/cugrade grade "$sample" -o build/sample-results -e sum --require-sandbox none || status=$?
case $status in
    0 | 77) echo; echo "cugrade setup: done. The sample class's gradebook is build/sample-results/gradebook.csv," \
        "each student's feedback build/sample-results/students/ID/feedback.md" ;;
    *) exit "$status" ;;
esac

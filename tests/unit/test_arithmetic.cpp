// The contract's arithmetic rule, read from real machine code: small kernels compiled by the real nvcc for sm_90
// (the graded GPUs), then every course file that must pass it. No GPU needed. Messages are asserted verbatim.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <regex>

#include "inspect/arithmetic_check.hpp"
#include "catch.hpp"
#include "build/course_tools.hpp"
#include "build/toolchain.hpp"
#include "base/file_io.hpp"

namespace {

using namespace cugrade;
namespace fs = std::filesystem;

const char* const graded_arch = "sm_90";

const Toolchain& toolchain() {
    static const Toolchain found = find_toolchain(std::nullopt);
    return found;
}

bool can_read_machine_code() {
    const std::string cuobjdump = toolchain().cuobjdump;
    return !cuobjdump.empty() && fs::exists(fs::path(cuobjdump).parent_path() / "nvdisasm");
}

// Without cuobjdump and nvdisasm beside nvcc there is no machine code to read: the case ends its process with 77,
// which ctest reports as skipped (tests/CMakeLists.txt), never as passed.
void skip_without_machine_code_reader() {
    if (!can_read_machine_code()) {
        std::cout << "skipped: no cuobjdump and nvdisasm beside nvcc: the arithmetic rule is not checked here\n";
        std::exit(77);
    }
}

ContractRules refusing_all(const std::string& words = "Compute in float32 only") {
    ContractRules rules;
    rules.refused_arithmetic = {arithmetic_classes().begin(), arithmetic_classes().end()};
    rules.arithmetic_words = words;
    return rules;
}

struct Checked {
    std::string compile_failure;  // what nvcc said, when it failed
    std::vector<Finding> findings;
};

// Compiles `source` as `name` in `folder` for the graded architecture, as the build does (`includes`: -I and
// -include flags for a contract), and checks it. No assertion here: it runs on several threads.
Checked compile_and_check(const fs::path& folder, const std::string& name, const std::string& source,
                          const std::vector<std::string>& includes = {}, const ContractRules& rules = refusing_all()) {
    fs::create_directories(folder);
    write_file(folder / name, source);
    std::vector<std::string> compile = {toolchain().nvcc};
    for (const auto& flag : nvcc_common_flags()) {
        compile.push_back(flag);
    }
    compile.push_back(fmt::format("-arch={}", graded_arch));
    compile.insert(compile.end(), includes.begin(), includes.end());
    compile.insert(compile.end(), {"-c", name, "-o", name + ".o"});
    const ProcessResult compiled = run_tool(compile, folder, 300);
    if (!compiled.status.success()) {
        return {compiled.output.empty() ? compiled.status.describe() : compiled.output, {}};
    }
    SubmissionFile submission;
    submission.shown = name;
    submission.name = name;
    submission.bytes = source;
    return {"", check_arithmetic(folder / (name + ".o"), submission, rules, toolchain().cuobjdump)};
}

std::vector<Finding> check_kernel(const std::string& source, const ContractRules& rules = refusing_all()) {
    const Checked checked =
        compile_and_check(fs::temp_directory_path() / "cugrade-test-arithmetic", "kernel.cu", source, {}, rules);
    INFO(checked.compile_failure);
    REQUIRE(checked.compile_failure.empty());
    return checked.findings;
}

std::vector<std::string> messages(const std::vector<Finding>& findings) {
    std::vector<std::string> all;
    for (const auto& finding : findings) {
        CHECK(finding.rule == "arithmetic");
        all.push_back(finding.message);
    }
    return all;
}

}  // namespace

TEST_CASE("instructions are sorted into the classes of arithmetic a contract refuses", "[arithmetic]") {
    const auto class_of = [](const std::string& instruction) {
        const auto arithmetic = arithmetic_of(instruction);
        return arithmetic ? arithmetic_key(*arithmetic) : std::string("none");
    };
    for (const std::string fp64 :
         {"DADD R2, R6, R2", "DMUL R2, R2, 0.5", "DFMA.RM R8, R12, R8, R10", "DSETP.GEU.AND P0, PT, R2, 2, PT",
          "DSET.LT.AND R0, R2, R4, PT", "DMNMX R2, R2, R4, !PT", "MUFU.RSQ64H R7, R5", "MUFU.RCP64H R3, R5"}) {
        INFO(fp64);
        CHECK(class_of(fp64) == "fp64");
    }
    for (const std::string float_mma :
         {"HMMA.1684.F32.TF32 R12, R8, R14, RZ", "HMMA.16816.F32.BF16 R4, R8, R12, R4",
          "HMMA.16816.F16 R4, R8, R12, R4", "HGMMA.64x128x16.F32 R24, gdesc[UR4], R24",
          "QGMMA.64x64x32.F32.E4M3.E4M3 R24, gdesc[UR4], R24", "DMMA.884 R4, R8, R12, R4"}) {
        INFO(float_mma);
        CHECK(class_of(float_mma) == "float_mma");
    }
    for (const std::string integer_mma :
         {"IMMA.16832.S8.S8 R4, R8, R12, R4", "IGMMA.64x64x32.S32.S8.S8 R24, gdesc[UR4], R24",
          "BMMA.88128.AND.POPC R4, R8, R12, R4"}) {
        INFO(integer_mma);
        CHECK(class_of(integer_mma) == "integer_mma");
    }
    for (const std::string half :
         {"HADD2 R0, R0.H0_H0, R11.H0_H0", "HMUL2.BF16_V2 R0, R2, R3", "HFMA2.MMA R7, R0, R0, R0",
          "HFMA2.MMA R0, R0, 1, 1, R7", "HFMA2.MMA.BF16_V2 R13, R0, R9, -RZ", "HSETP2.GT.AND P0, P1, R0, R2, PT",
          "HSET2.BF.LT.AND R0, R2, R3, PT", "HMNMX2.BF16_V2 R7, R0, R7, !PT"}) {
        INFO(half);
        CHECK(class_of(half) == "packed_half");
    }
    // Moves and conversions compute nothing: the compiler's move of a constant (0 * 0 + c), sm_75's half-to-float
    // conversion (x + -0), conversions between widths, and opcodes that only begin like a refused one.
    for (const std::string none :
         {"HFMA2.MMA R5, -RZ, RZ, 2, 0", "HFMA2 R3, -RZ, RZ, 0, 4.76837158203125e-07", "HADD2.F32 R3, -RZ, R8.H0_H0",
          "F2F.F64.F32 R8, R2", "F2F.F32.F64 R5, R2", "I2F.F64.U32 R2, UR4", "F2FP.F16.F32.PACK_AB R0, RZ, R6",
          "F2F.F16.F32 R9, R4", "DEPBAR.LE SB0, 0x0", "FFMA R5, R2, R3, R4", "IMAD.WIDE R4, R11, 0x4, R8",
          "SHFL.DOWN PT, R3, R2, 0x10, 0x1f", "MUFU.RSQ R3, R2", "FMNMX R0, R1, R2, !PT"}) {
        INFO(none);
        CHECK(class_of(none) == "none");
    }
}

TEST_CASE("a double accumulator is refused at its line, with the contract's words", "[arithmetic]") {
    skip_without_machine_code_reader();
    const auto found = check_kernel(R"(#include <cstddef>
__global__ void sum_kernel(const float* input, std::size_t n, float* out) {
    double acc = 0;
    for (std::size_t i = threadIdx.x; i < n; i += blockDim.x) {
        acc += input[i];
    }
    out[threadIdx.x] = static_cast<float>(acc);
}
)",
                                    refusing_all("Sum in float32: no double-precision arithmetic"));
    CHECK(messages(found) == std::vector<std::string>{
                                 "kernel.cu:5: sum_kernel uses double-precision arithmetic (DADD), which this exercise "
                                 "forbids (\"Sum in float32: no double-precision arithmetic\"): a literal such as 0.5 "
                                 "is a double; write 0.5f, and keep every variable float"});
}

TEST_CASE("a stray double literal in a float kernel is pointed at, with its float spelling", "[arithmetic]") {
    skip_without_machine_code_reader();
    const auto found = check_kernel(R"(
__global__ void tree(float* partial) {
    for (unsigned active = blockDim.x * 0.5; active > 0; active /= 2) {
        if (threadIdx.x < active) partial[threadIdx.x] += partial[threadIdx.x + active];
        __syncthreads();
    }
}

__global__ void scale(const float* in, float* out, int n) {
    float sum = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) sum += in[i];
    out[threadIdx.x] = sum * 0.1;
}
)");
    CHECK(messages(found) ==
          std::vector<std::string>{
              "kernel.cu:3: tree uses double-precision arithmetic (DMUL), which this exercise forbids (\"Compute in "
              "float32 only\"): 0.5 is a double; write 0.5f, and keep every variable float",
              "kernel.cu:12: scale uses double-precision arithmetic (DMUL), which this exercise forbids (\"Compute in "
              "float32 only\"): 0.1 is a double; write 0.1f, and keep every variable float"});
}

TEST_CASE("tensor-core fragments on TF32 are refused once per kernel, at the student's line", "[arithmetic]") {
    skip_without_machine_code_reader();
    const auto found = check_kernel(R"(#include <mma.h>
using namespace nvcuda;
__global__ void tile(const float* a, const float* b, float* c) {
    wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 8, float> fc;
    wmma::fill_fragment(fc, 0.0f);
    wmma::load_matrix_sync(fa, a, 16);
    wmma::load_matrix_sync(fb, b, 16);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);
}
)");
    CHECK(messages(found) ==
          std::vector<std::string>{
              "kernel.cu:10: tile uses tensor-core matrix multiply-accumulate on TF32, FP16 or BF16 (HMMA), which "
              "this exercise forbids (\"Compute in float32 only\"): multiply and add with ordinary instructions, not "
              "with wmma or mma fragments"});
}

TEST_CASE("integer tensor-core fragments are refused as integer matrix arithmetic", "[arithmetic]") {
    skip_without_machine_code_reader();
    const auto found = check_kernel(R"(#include <mma.h>
using namespace nvcuda;
__global__ void tile(const signed char* a, const signed char* b, int* c) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, signed char, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, signed char, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, int> fc;
    wmma::fill_fragment(fc, 0);
    wmma::load_matrix_sync(fa, a, 16);
    wmma::load_matrix_sync(fb, b, 16);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);
}
)");
    CHECK(messages(found) ==
          std::vector<std::string>{
              "kernel.cu:10: tile uses tensor-core matrix multiply-accumulate on integers (IMMA), which this exercise "
              "forbids (\"Compute in float32 only\"): multiply and add with ordinary instructions, not with wmma or "
              "mma fragments"});
}

TEST_CASE("half arithmetic, packed or not, is refused at the line that calls it", "[arithmetic]") {
    skip_without_machine_code_reader();
    const auto found = check_kernel(R"(#include <cuda_fp16.h>
__global__ void pairs(const __half2* a, __half2* b) {
    const __half2 s = __hadd2(a[threadIdx.x], a[threadIdx.x + 1]);
    b[threadIdx.x] = __hfma2(s, s, s);
}
)");
    CHECK(messages(found) ==
          std::vector<std::string>{"kernel.cu:3: pairs uses half or bfloat16 arithmetic (HFMA2), which this exercise "
                                   "forbids (\"Compute in float32 only\"): keep the values float, not __half or "
                                   "__nv_bfloat16"});
}

TEST_CASE("only the classes the contract refuses are reported", "[arithmetic]") {
    skip_without_machine_code_reader();
    ContractRules rules = refusing_all();
    rules.refused_arithmetic = {ArithmeticClass::packed_half};
    CHECK(check_kernel("__global__ void k(double* x) { x[threadIdx.x] *= 3.0; }\n", rules).empty());
    CHECK(check_kernel("__global__ void k(double* x) { x[threadIdx.x] *= 3.0; }\n", ContractRules{}).empty());
}

TEST_CASE("float intrinsics, integers, shuffles, conversions and a debug printf are not refused", "[arithmetic]") {
    skip_without_machine_code_reader();
    const auto found = check_kernel(R"(#include <cstdio>
#include <cuda_fp16.h>
__global__ void fine(const float* x, float* out, __half* stored, const double* wide, int n) {
    float v = __fmaf_rn(x[threadIdx.x], 2.0f, 1.0f);
    v = fmaf(v, v, 3.0f);
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
    const int index = (threadIdx.x * 7 / 3) % n;
    out[index] = v + 0.5f + static_cast<float>(wide[index]);
    stored[index] = __float2half(v);
    if (threadIdx.x == 0) printf("partial %f at %d\n", v, index);
}
)");
    CHECK(messages(found).empty());
}

namespace {

// What the build gives a file of `exercise`: its folder, its contract included first.
std::vector<std::string> contract_flags(const std::string& exercise) {
    const fs::path folder = fs::path(CUGRADE_SOURCE_DIR) / "exercises" / exercise;
    return {"-I" + folder.string(), "-include", exercise + ".h"};
}

struct CourseFile {
    fs::path path;
    std::string exercise;
};

// reference/*.cu, student_template/**.cu and each fixture whose expected.yaml does not expect the rule to refuse it.
std::vector<CourseFile> files_that_must_pass() {
    const fs::path root = CUGRADE_SOURCE_DIR;
    std::vector<CourseFile> files;
    for (const char* dir : {"reference", "student_template"}) {
        for (const auto& entry : fs::recursive_directory_iterator(root / dir)) {
            if (entry.path().extension() == ".cu") {
                files.push_back({entry.path(), entry.path().stem().string()});
            }
        }
    }
    for (const auto& exercise : fs::directory_iterator(root / "tests" / "fixtures")) {
        if (!exercise.is_directory()) {
            continue;
        }
        for (const auto& fixture : fs::directory_iterator(exercise.path())) {
            if (!fixture.is_directory()) {
                continue;
            }
            const std::string expected = read_file(fixture.path() / "expected.yaml");
            if (expected.find("arithmetic") != std::string::npos ||
                expected.find("build_failed") != std::string::npos) {
                continue;
            }
            for (const auto& entry : fs::directory_iterator(fixture.path())) {
                if (entry.path().extension() == ".cu") {
                    files.push_back({entry.path(), exercise.path().filename().string()});
                }
            }
        }
    }
    std::sort(files.begin(), files.end(), [](const CourseFile& a, const CourseFile& b) { return a.path < b.path; });
    return files;
}

}  // namespace

TEST_CASE("no reference, template or passing fixture breaks the arithmetic rule on sm_90", "[arithmetic][corpus]") {
    skip_without_machine_code_reader();
    const auto files = files_that_must_pass();
    REQUIRE(files.size() > 20);
    const fs::path scratch = fs::temp_directory_path() / "cugrade-test-arithmetic-corpus";
    // Two at a time: the machine is shared.
    std::vector<std::string> found;
    for (std::size_t first = 0; first < files.size(); first += 2) {
        std::vector<std::future<Checked>> running;
        for (std::size_t i = first; i < std::min(first + 2, files.size()); ++i) {
            running.push_back(std::async(std::launch::async, [&, i] {
                const std::string name = files[i].path.filename().string();
                return compile_and_check(scratch / std::to_string(i), name, read_file(files[i].path),
                                         contract_flags(files[i].exercise));
            }));
        }
        for (std::size_t i = 0; i < running.size(); ++i) {
            const Checked checked = running[i].get();
            if (!checked.compile_failure.empty()) {
                found.push_back(files[first + i].path.string() + ": did not compile: " + checked.compile_failure);
            }
            for (const auto& finding : checked.findings) {
                found.push_back(files[first + i].path.string() + ": " + finding.message);
            }
        }
    }
    CHECK(found == std::vector<std::string>{});
}

TEST_CASE("a machine-code reader that fails rejects the submission, and a toolkit without one checks nothing",
          "[arithmetic]") {
    const fs::path tools = fs::temp_directory_path() / "cugrade-test-arithmetic-tools";
    fs::create_directories(tools);
    write_file(tools / "cuobjdump", "#!/bin/sh\ntouch kernel.sm_90.cubin\n");
    write_file(tools / "nvdisasm", "#!/bin/sh\necho 'nvdisasm fatal : out of memory' >&2\nexit 3\n");
    fs::permissions(tools / "cuobjdump", fs::perms::owner_all);
    fs::permissions(tools / "nvdisasm", fs::perms::owner_all);
    SubmissionFile submission;
    submission.shown = "student/sum.cu";
    submission.name = "sum.cu";
    const auto found = check_arithmetic(tools / "sum.o", submission, refusing_all(), (tools / "cuobjdump").string());
    CHECK(messages(found) ==
          std::vector<std::string>{"student/sum.cu: the grader could not read its machine code to check the "
                                   "exercise's arithmetic rule (nvdisasm exited with code 3): simplify the file, or "
                                   "ask your instructor"});
    CHECK(check_arithmetic(tools / "sum.o", submission, refusing_all(), "").empty());
    fs::remove(tools / "nvdisasm");
    CHECK(check_arithmetic(tools / "sum.o", submission, refusing_all(), (tools / "cuobjdump").string()).empty());
}

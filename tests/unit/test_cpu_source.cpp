// A submission's CUDA made C++ for the CPU self-check: launches and dynamic shared memory rewritten in place.
#include <algorithm>
#include <string>

#include "catch.hpp"
#include "cpu/cpu_source.hpp"

using cugrade::rewrite_for_cpu;

namespace {

int lines(const std::string& text) { return static_cast<int>(std::count(text.begin(), text.end(), '\n')); }

}  // namespace

TEST_CASE("a launch becomes a call of the CPU launcher, on the same line") {
    CHECK(
        rewrite_for_cpu("  partial_sums<<<blocks, THREADS, 0, stream>>>(input, n, scratch);\n") ==
        "  ::cugrade::cpu::launcher(blocks, THREADS, 0, stream).named(\"partial_sums\")([](auto... cugrade_arguments) { "
        "partial_sums(cugrade_arguments...); }, input, n, scratch);\n");
    CHECK(
        rewrite_for_cpu("k<<<g, b>>>(x);") ==
        "::cugrade::cpu::launcher(g, b).named(\"k\")([](auto... cugrade_arguments) { k(cugrade_arguments...); }, x);");
    CHECK(
        rewrite_for_cpu("sgemm_kernel<false><<<grid, kThreads, 0, stream>>>(a, b, c);") ==
        "::cugrade::cpu::launcher(grid, kThreads, 0, stream).named(\"sgemm_kernel<false>\")([](auto... cugrade_arguments) { "
        "sgemm_kernel<false>(cugrade_arguments...); }, a, b, c);");
    CHECK(
        rewrite_for_cpu("ns::kernel <<<1, 32>>> (p);") ==
        "::cugrade::cpu::launcher(1, 32).named(\"ns::kernel\") ([](auto... cugrade_arguments) { ns::kernel(cugrade_arguments...); }, p);");
    // A kernel template deduces its arguments from the launch's, and a launch may pass none.
    CHECK(rewrite_for_cpu("k<<<1, 1>>>( );") ==
          "::cugrade::cpu::launcher(1, 1).named(\"k\")([](auto... cugrade_arguments) { k(cugrade_arguments...); } );");
    const std::string across = "k<<<dim3(1,\n  2), 32,\n  0, s>>>(x,\n y);\n";
    CHECK(lines(rewrite_for_cpu(across)) == lines(across));
}

TEST_CASE("comments and strings keep their chevrons") {
    const std::string text = "// k<<<1, 1>>>()\n/* k<<<2, 2>>> */ printf(\"<<<\\\" >>>\"); char c = '<';\n";
    CHECK(rewrite_for_cpu(text) == text);
}

TEST_CASE("extern __shared__ becomes the launch's dynamic shared memory") {
    CHECK(rewrite_for_cpu("    extern __shared__ unsigned block_counts[];\n") ==
          "    unsigned* block_counts = static_cast<unsigned*>(::cugrade::cpu::dynamic_shared_memory());\n");
    CHECK(rewrite_for_cpu("extern __shared__ __align__(16) unsigned int s [ ];") ==
          "unsigned int* s = static_cast<unsigned int*>(::cugrade::cpu::dynamic_shared_memory());");
    CHECK(rewrite_for_cpu("__shared__ float partial[256];") == "__shared__ float partial[256];");
}

TEST_CASE("a launch the rewrite cannot read is an error at its line") {
    CHECK_THROWS_WITH(rewrite_for_cpu("\n\n<<<1, 1>>>();"), "line 3: a kernel launch cugrade cannot read for the CPU");
    CHECK_THROWS_WITH(rewrite_for_cpu("k<<<1, 1();"), "line 1: a kernel launch cugrade cannot read for the CPU");
}

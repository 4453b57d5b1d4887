// What a submission included: the compiler's dependency list read, its #include lines found, and each library named
// with the line that brought it. The lists here are written as nvcc writes them; test_inspect.cpp has real builds.
#include <filesystem>
#include <fstream>
#include <set>

#include "catch.hpp"
#include "fresh_folder.hpp"
#include "build/included_headers.hpp"

using namespace cugrade;
namespace fs = std::filesystem;

namespace {

const std::string include_dir = "/usr/local/cuda/bin/../targets/x86_64-linux/include/";
const std::string cccl = "/usr/local/cuda-13.0/include/cccl/";

// nvcc's list: the compiled file, what nvcc and the contract include, the start marker, then the submission's own.
std::vector<std::string> listed(const std::vector<std::string>& own) {
    std::vector<std::string> all = {"scan.cu", include_dir + "cuda_runtime.h", "./scan.h",
                                    std::string("./") + submission_start_header};
    all.insert(all.end(), own.begin(), own.end());
    return all;
}

}  // namespace

TEST_CASE("a dependency list is read as make writes it, continuations and escaped spaces too") {
    const fs::path folder = fresh_folder("included-headers", "list");
    std::ofstream(folder / "dependencies.d") << "submission.o : scan.cu \\\n    /usr/include/stdc-predef.h \\\n"
                                                "    ./scan.h /opt/odd\\ name/x.h \\\n    ./" +
                                                    std::string(submission_start_header) + "\n";
    CHECK(read_dependency_list(folder / "dependencies.d") ==
          std::vector<std::string>{"scan.cu", "/usr/include/stdc-predef.h", "./scan.h", "/opt/odd name/x.h",
                                   std::string("./") + submission_start_header});
}

TEST_CASE("#include lines are found as the preprocessor sees them") {
    const auto directives = include_directives("// #include <thrust/sort.h>\n"
                                               "/* #include <cub/cub.cuh>\n   still a comment */ #include <x.h>\n"
                                               "  #  include <cub/block/block_scan.cuh> // the block scan\n"
                                               "#include \\\n\"/usr/include/y.h\"\n"
                                               "#include HEADER\n");
    REQUIRE(directives.size() == 4);
    CHECK(directives[0].line == 3);
    CHECK(directives[0].name == "x.h");
    CHECK(directives[1].line == 4);
    CHECK(directives[1].written == "<cub/block/block_scan.cuh>");
    CHECK(directives[2].line == 5);
    CHECK(directives[2].name == "/usr/include/y.h");
    CHECK(directives[3].written == "HEADER");
    CHECK(directives[3].name.empty());
}

TEST_CASE("headers map to libraries by a component of their path, CUDA's own headers to none") {
    CHECK(library_of_header(cccl + "cub/block/block_scan.cuh").name == "cub/block/block_scan.cuh");
    CHECK(library_of_header(cccl + "cub/block/block_scan.cuh").library->name == "cub");
    CHECK(library_of_header(cccl + "thrust/reduce.h").library->name == "thrust");
    CHECK(library_of_header(include_dir + "cublas_v2.h").library->display == "cuBLAS");
    CHECK(library_of_header(include_dir + "cufftXt.h").library->name == "cufft");
    CHECK(library_of_header("/usr/local/include/cute/tensor.hpp").library->name == "cutlass");
    for (const std::string other : {"cuda_runtime.h", "crt/host_config.h", "cooperative_groups/reduce.h", "cuda_fp16.h",
                                    "mma.h", "curand_kernel.h"}) {
        CHECK(library_of_header(include_dir + other).library == nullptr);
    }
    CHECK(library_of_header(cccl + "cuda/std/__cccl/compiler.h").library == nullptr);
    CHECK(library_of_header("/usr/include/c++/12/cstdio").library == nullptr);
}

TEST_CASE("a library is named with the #include that brought it") {
    const std::string thrust_then_cub = "#include \"scan.h\"\n#include <cstdio>\n#include <thrust/reduce.h>\n";
    const auto found = included_libraries(listed({"/usr/include/c++/12/cstdio", cccl + "thrust/reduce.h",
                                                  cccl + "cub/util_arch.cuh", cccl + "thrust/detail/config.h"}),
                                          thrust_then_cub);
    REQUIRE(found);
    REQUIRE(found->included.size() == 1);  // the CUB of Thrust's headers is Thrust's
    CHECK(found->included[0].library->name == "thrust");
    CHECK(found->included[0].named);
    CHECK(found->included[0].directive->line == 3);
    CHECK(found->present == std::set<std::string>{"cub", "thrust"});

    // Through a header that is no library's.
    const auto through = included_libraries(listed({cccl + "cuda/algorithm", cccl + "cub/device/device_copy.cuh"}),
                                            "#include <cuda/algorithm>\n");
    REQUIRE(through->included.size() == 1);
    CHECK(through->included[0].header == "cub/device/device_copy.cuh");
    CHECK_FALSE(through->included[0].named);
    CHECK(through->included[0].directive->written == "<cuda/algorithm>");

    // After a computed #include nothing is certain: the file brought it.
    // The Thrust that CUB's headers include is still CUB's.
    const auto computed = included_libraries(
        listed({cccl + "cuda/std/array", cccl + "cub/warp/warp_scan.cuh", cccl + "thrust/iterator/discard_iterator.h"}),
        "#include <cuda/std/array>\n#include CUB_HEADER\n");
    REQUIRE(computed->included.size() == 1);
    CHECK(computed->included[0].library->name == "cub");
    CHECK_FALSE(computed->included[0].directive);

    // What nvcc and the contract include is never the submission's, and a line in #if 0 is not an include.
    std::vector<std::string> contract_uses_cub = {"scan.cu", cccl + "cub/cub.cuh", "./scan.h",
                                                  std::string("./") + submission_start_header};
    CHECK(included_libraries(contract_uses_cub, "#include <cub/cub.cuh>\n")->present.empty());
    CHECK(included_libraries(listed({}), "#if 0\n#include <cub/cub.cuh>\n#endif\n")->included.empty());
}

TEST_CASE("a list without the start marker gives nothing to judge by") {
    CHECK_FALSE(included_libraries({"scan.cu", cccl + "cub/cub.cuh"}, "#include <cub/cub.cuh>\n"));
}

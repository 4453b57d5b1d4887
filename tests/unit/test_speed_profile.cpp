// Nsight Compute's report read back, and the speed hints it gives. data/ncu-samples.csv is ncu 2025.3's report on an
// H100 for five small kernels with one known flaw each (n = 4096 x 4096 floats), cut down to the columns cugrade asks
// for.
#include <fstream>
#include <sstream>
#include <string>

#include "catch.hpp"
#include "diagnose/access_width.hpp"
#include "inspect/sass_listing.hpp"
#include "diagnose/speed_profile.hpp"

using namespace cugrade;

namespace {

std::vector<KernelProfile> samples(const std::string& file_name = "ncu-samples.csv") {
    std::ifstream file(std::string(CUGRADE_TEST_DATA) + "/unit/data/" + file_name);
    std::stringstream text;
    text << file.rdbuf();
    return read_profile(text.str());
}

KernelProfile sample(const std::string& name) {
    for (const auto& k : samples()) {
        if (k.name == name) {
            return k;
        }
    }
    FAIL("no sample " << name);
    return {};
}

constexpr double elements = 4096.0 * 4096.0;

}  // namespace

TEST_CASE("the profiler's report gives each launch its kernel's name and its metrics in base units") {
    const auto launches = samples();
    REQUIRE(launches.size() == 5);
    CHECK(launches[0].name == "copy_naive_transpose");
    CHECK(launches[0].metric("gpu__time_duration.sum") == 316224.0);
    CHECK(launches[0].metric("sm__cycles_active.avg") == Approx(608876.46));
    CHECK(launches[0].metric("launch__grid_size") == 16384.0);
    CHECK(launches[0].metric("no__such_metric") == 0.0);
    CHECK_THROWS_WITH(read_profile("==PROF== Connected to process 1\n"), "no kernel table in the profiler's report");
}

TEST_CASE("uncoalesced stores, bank conflicts, one block and an atomic per element are each named with their figure") {
    const auto naive = speed_diagnosis({sample("copy_naive_transpose")}, {elements, 3000.0});
    REQUIRE(naive);
    CHECK(naive->kind == "speed");
    CHECK(naive->summary == "Nsight Compute: global stores of copy_naive_transpose are uncoalesced: 32.0 sectors of 32 "
                            "bytes per warp request, where 4 serve 32 consecutive floats");
    CHECK(naive->hint.find("consecutive threads") != std::string::npos);

    const auto unpadded = speed_diagnosis({sample("unpadded_transpose")}, {elements, 3000.0});
    REQUIRE(unpadded);
    CHECK(unpadded->summary ==
          "Nsight Compute: shared-memory loads of unpadded_transpose have 32.2-way bank conflicts");
    CHECK(unpadded->hint.find("TILE+1") != std::string::npos);

    const auto one_block = speed_diagnosis({sample("one_block_sum")}, {elements, 3000.0});
    REQUIRE(one_block);
    CHECK(one_block->summary == "Nsight Compute: one_block_sum runs 1 block on a GPU of 132 SMs: 1 of 132 SMs busy");

    const auto atomics = speed_diagnosis({sample("atomic_sum")}, {elements, 3000.0});
    REQUIRE(atomics);
    CHECK(atomics->summary == "Nsight Compute: atomic_sum issues 524288 atomic instructions on global memory, one per "
                              "warp for every 32 elements: atomics on one address serialise");
    CHECK(atomics->hint.find("one atomicAdd per block") != std::string::npos);
}

TEST_CASE("a figure the profiler could not collect reads as missing, and launches without a time give no hints") {
    const auto launches = read_profile("\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\",\"dram__bytes_read.sum\"\n"
                                       "\"\",\"\",\"ns\",\"byte\"\n"
                                       "\"0\",\"add_each(const float *, unsigned long, float *)\",\"nan\",\"inf\"\n");
    REQUIRE(launches.size() == 1);
    CHECK(launches[0].name == "add_each");
    CHECK(launches[0].metrics.empty());
    CHECK_FALSE(speed_diagnosis(launches, {elements, 3000.0}));
}

TEST_CASE("the bandwidth the kernels reach is the last evidence, and a profile with nothing wrong says so") {
    // Coalesced 4-byte loads on every SM, with nothing else wrong, at a fifth of the copy's bandwidth.
    const auto tree = speed_diagnosis({sample("divergent_sum")}, {elements, 3000.0});
    REQUIRE(tree);
    CHECK(tree->summary == "Nsight Compute: divergent_sum loads 4 bytes per thread at a time (4.0 sectors per warp "
                           "request) and reaches 20% of the copy's bandwidth: too few bytes in flight");
    CHECK(tree->topic == "vector_loads");
    // The same kernel where a copy is no faster: nothing stands out.
    const auto at_copy_speed = speed_diagnosis({sample("divergent_sum")}, {elements, 600.0});
    REQUIRE(at_copy_speed);
    CHECK(at_copy_speed->summary == "Nsight Compute: the kernels moved 69 MB at 586 GB/s: 98% of the copy's 600 GB/s; "
                                    "nothing stands out in how the kernels use the GPU");
    const auto naive = speed_diagnosis({sample("copy_naive_transpose")}, {elements, 0.0});
    REQUIRE(naive);
    CHECK(naive->evidence.back().rfind("the kernels moved ", 0) == 0);
    CHECK_FALSE(speed_diagnosis({}, {elements, 3000.0}));
}

TEST_CASE("bytes beyond the exercise's minimum, spilled registers and a sector's unused bytes are named") {
    // A scan that writes its data out and reads it back: twice the bytes it needs.
    const KernelProfile tree = sample("divergent_sum");
    const double moved = tree.metric("dram__bytes_read.sum") + tree.metric("dram__bytes_write.sum");
    const auto twice = speed_diagnosis({tree}, {elements, 600.0, moved / 2.0});
    REQUIRE(twice);
    CHECK(twice->summary == "Nsight Compute: the kernels move 69 MB where the exercise needs 35 MB: 2.0x the minimum, "
                            "each element read or written about 2 times");
    CHECK(twice->topic == "traffic");

    KernelProfile spills = tree;
    spills.metrics["l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum"] = moved / 2.0;
    spills.metrics["l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum"] = moved / 2.0;
    spills.metrics["launch__registers_per_thread"] = 255.0;
    const auto spilled = speed_diagnosis({spills}, {elements, 600.0});
    REQUIRE(spilled);
    CHECK(spilled->summary == "Nsight Compute: divergent_sum moves 69 MB through local memory (255 registers per "
                              "thread): registers spilled, or an array indexed at run time");

    // Two floats used of each sector's eight: a warp across 16 rows, 2 columns each (threadIdx.x along the rows).
    KernelProfile strided = tree;
    strided.metrics["smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct"] = 25.0;
    const auto uncoalesced = speed_diagnosis({strided}, {elements, 600.0});
    REQUIRE(uncoalesced);
    CHECK(uncoalesced->summary == "Nsight Compute: global loads of divergent_sum are uncoalesced: 25% of each 32-byte "
                                  "sector they fetch is used (4.0 sectors per warp request)");
}

TEST_CASE("several kernels: each finding weighs by its kernel's share of the time, and many short launches show") {
    // The one-block kernel takes most of the time: its idle SMs come first, the transposes' flaws after.
    const auto mixed = speed_diagnosis({sample("copy_naive_transpose"), sample("one_block_sum")}, {elements, 3000.0});
    REQUIRE(mixed);
    CHECK(mixed->summary.find("one_block_sum (87% of the time) runs 1 block") != std::string::npos);
    CHECK(mixed->evidence.front().find("global stores of copy_naive_transpose (13% of the time)") != std::string::npos);

    // Six short kernels, one per level of a tree, say.
    std::vector<KernelProfile> levels;
    for (int level = 0; level < 6; ++level) {
        KernelProfile tiny = sample("divergent_sum");
        tiny.name = "level_" + std::to_string(level);
        tiny.metrics["gpu__time_duration.sum"] = 2000.0;
        levels.push_back(tiny);
    }
    const auto launches = speed_diagnosis(levels, {elements, 3000.0});
    REQUIRE(launches);
    CHECK(launches->summary == "Nsight Compute: 6 kernel launches per call, 2.0 us each on average: each launch costs "
                               "about 3 us of its own");
}

TEST_CASE("the profiler's command profiles the submission's NVTX ranges with the clocks left alone") {
    const auto command = profiler_command("/usr/local/cuda/bin/ncu", "/tmp/work/profile.csv");
    CHECK(command.front() == "/usr/local/cuda/bin/ncu");
    CHECK(std::find(command.begin(), command.end(), "submission/") != command.end());
    const auto clock = std::find(command.begin(), command.end(), "--clock-control");
    REQUIRE(clock != command.end());
    CHECK(*(clock + 1) == "none");
    CHECK(command[command.size() - 3] == "/tmp/work/profile.csv");
}

TEST_CASE("the launches of one kernel count as one: its flaw is named once, with the times added up") {
    const KernelProfile naive = sample("copy_naive_transpose");
    const auto twice = speed_diagnosis({naive, naive, sample("one_block_sum")}, {elements, 3000.0});
    REQUIRE(twice);
    // 2 x 0.316 ms of the naive transpose against 2.134 ms of the one block: 23% and 77% of the time.
    CHECK(twice->summary.find("one_block_sum (77% of the time)") != std::string::npos);
    REQUIRE(twice->evidence.size() == 2);
    CHECK(twice->evidence[0] == "global stores of copy_naive_transpose (23% of the time) are uncoalesced: 32.0 sectors "
                                "of 32 bytes per warp request, where 4 serve 32 consecutive floats");
}

// ncu 2025.3's reports on an H100 of three fixtures' speed tests, as cugrade took them (tests/fixtures), cut down to
// the columns it asks for; the figures beside each are those the speed test measured.
TEST_CASE("real fixtures' profiles: each names its fixture's flaw, and one float per block is no flaw") {
    // The seed tree writes one partial per block: an eighth of a sector, and no cause. Its 4-byte loads are.
    const auto seed = speed_diagnosis(samples("ncu-sum-seed_tree.csv"), {268435456.0, 3027.1, 1073741824.0});
    REQUIRE(seed);
    CHECK(seed->summary.find("uncoalesced") == std::string::npos);
    CHECK(seed->topic == "vector_loads");

    const auto rows_on_x = speed_diagnosis(samples("ncu-matadd-rows_on_x.csv"), {268435456.0, 3018.6, 3221225472.0});
    REQUIRE(rows_on_x);
    CHECK(rows_on_x->summary == "Nsight Compute: global loads of add_2d are uncoalesced: 25% of each 32-byte sector "
                                "they fetch is used (16.0 sectors per warp request)");

    const auto hillis = speed_diagnosis(samples("ncu-scan-hillis_steele.csv"), {268435456.0, 3020.2, 2147483648.0});
    REQUIRE(hillis);
    CHECK(hillis->topic == "traffic");
    CHECK(hillis->summary.find("where the exercise needs 2147 MB: 2.0x the minimum") != std::string::npos);
}

TEST_CASE("the checker's own counters give the same hints, under the device name demangled and shortened") {
    // What the checker read on an H100 of the one-block sum fixture's speed test (n = 2^28), as it sends it.
    std::ifstream file(std::string(CUGRADE_TEST_DATA) + "/unit/data/counter-profile-one-block.json");
    const auto launches = read_counter_profile(nlohmann::json::parse(file));
    REQUIRE(launches.size() == 1);
    CHECK(launches[0].name == "one_block_sum");
    CHECK(launches[0].metric("launch__grid_size") == 1.0);
    SpeedTestFigures figures{268435456.0, 3000.0, 268435456.0 * 4};
    figures.source = "the GPU's counters";
    const auto found = speed_diagnosis(launches, figures);
    REQUIRE(found);
    CHECK(found->summary == "the GPU's counters: one_block_sum runs 1 block on a GPU of 132 SMs: 1 of 132 SMs busy");
    CHECK(describe_profile(launches).rfind("one_block_sum: dram__bytes_read.sum=1.07412e+09 ", 0) == 0);
}

TEST_CASE("a profile from the checker that is not a list of launches is refused with what is wrong") {
    CHECK_THROWS_WITH(read_counter_profile(nlohmann::json("launches")), "the harness's profile has no launches");
    CHECK_THROWS_WITH(read_counter_profile(nlohmann::json::parse(R"([{"name": 3, "metrics": {}}])")),
                      "the harness's profile is not a list of launches");
    // Metrics that are not numbers are left out, not read as 0.
    const auto launches =
        read_counter_profile(nlohmann::json::parse(R"([{"name": "k", "metrics": {"a": "x", "b": 2}}])"));
    REQUIRE(launches.size() == 1);
    CHECK(launches[0].metrics.size() == 1);
    CHECK(launches[0].metric("b") == 2.0);
}

TEST_CASE("the width of each kernel's global loads and stores is read from its machine code") {
    // cuobjdump -sass of two kernels for sm_90, cut down: 4-byte loads and stores; a float4 copy beside a byte load
    // and an 8-byte store, some predicated.
    const std::string sass = R"sass(
Fatbin elf code:
================
arch = sm_90
code version = [1,8]
host = linux
compile_size = 64bit

	code for sm_90
		Function : _Z6add_2dPKfS0_mmPf
	.headerflags	@"EF_CUDA_TEXMODE_UNIFIED EF_CUDA_64BIT_ADDRESS EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)"
        /*0000*/                   LDC R1, c[0x0][0x28] ;                          /* 0x00000a00ff017b82 */
                                                                                   /* 0x000fe20000000800 */
        /*0060*/               @P0 EXIT ;                                          /* 0x000000000000094d */
        /*0100*/                   LDG.E R2, desc[UR4][R2.64] ;                    /* 0x0000000402027981 */
        /*0110*/                   LDG.E R5, desc[UR4][R4.64] ;                    /* 0x0000000404057981 */
        /*0130*/                   STG.E desc[UR4][R6.64], R9 ;                    /* 0x0000000906007986 */
        /*0140*/                   EXIT ;                                          /* 0x000000000000794d */
		..........

		Function : _Z4wideILi3EEvPK6float4PS0_PKhPd
	.headerflags	@"EF_CUDA_TEXMODE_UNIFIED EF_CUDA_64BIT_ADDRESS EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)"
        /*0080*/              @!P1 LDG.E.128.CONSTANT R4, desc[UR4][R2.64] ;       /* 0x0000000402047981 */
        /*0090*/                   LDG.E.U8.CONSTANT R8, desc[UR4][R8.64] ;        /* 0x0000000408087981 */
        /*00a0*/                   LDS R10, [R11] ;                                /* 0x000000000b0a7984 */
        /*00c0*/                   STG.E.128 desc[UR4][R12.64], R4 ;               /* 0x000000040c007986 */
        /*00d0*/                   STG.E.64 desc[UR4][R14.64], R10 ;               /* 0x0000000a0e007986 */
		..........

		Function : _Z5emptyv
        /*0000*/                   EXIT ;                                          /* 0x000000000000794d */
)sass";
    const KernelAccessWidths widths = read_access_widths(sass);
    REQUIRE(widths.size() == 3);
    CHECK(widths.at("add_2d").widest_load_bytes == 4);
    CHECK(widths.at("add_2d").widest_store_bytes == 4);
    CHECK(widths.at("wide<3>").widest_load_bytes == 16);
    CHECK(widths.at("wide<3>").widest_store_bytes == 16);
    CHECK(widths.at("empty").widest_load_bytes == 0);
    CHECK(read_access_widths("cuobjdump: fatal: nothing to dump").empty());
    // Without the tool, nothing is known.
    CHECK_FALSE(sass_listing_of("", "device-code.fatbin"));
    CHECK_FALSE(sass_listing_of("/nonexistent/cuobjdump", "device-code.fatbin"));
}

TEST_CASE("from the checker's counters, 16 sectors a request are uncoalesced 4-byte accesses, coalesced 16-byte ones") {
    // What the checker read on an H200 of matadd's rows_on_x fixture (n = 16384 x 16384): threadIdx.x along the rows,
    // so each warp's 32 floats fall on 16 rows, 2 of each sector's 8 floats used.
    std::ifstream file(std::string(CUGRADE_TEST_DATA) + "/unit/data/counter-profile-rows-on-x.json");
    const auto launches = read_counter_profile(nlohmann::json::parse(file));
    REQUIRE(launches.size() == 1);
    SpeedTestFigures figures{16384.0 * 16384.0, 4227.0, 16384.0 * 16384.0 * 12};
    figures.source = "the GPU's counters";
    // Not knowing the width, 16 sectors a request could be float4s, coalesced.
    const auto unknown = speed_diagnosis(launches, figures);
    REQUIRE(unknown);
    CHECK(unknown->category == "slow, with nothing standing out");

    figures.access_widths["add_2d"] = {4, 4};
    const auto narrow = speed_diagnosis(launches, figures);
    REQUIRE(narrow);
    CHECK(narrow->topic == "coalescing");
    // Loads and stores, as wasteful as each other: one is the summary, the other the first evidence.
    REQUIRE(!narrow->evidence.empty());
    const std::string both = narrow->summary + "\n" + narrow->evidence[0];
    for (const std::string words : {"loads", "stores"}) {
        CHECK(both.find("global " + words +
                        " of add_2d are uncoalesced: 16.0 sectors of 32 bytes per warp request, "
                        "where its 4-byte " +
                        words + " need 4: at most 25% of each sector is used") != std::string::npos);
    }

    figures.access_widths["add_2d"] = {16, 16};
    const auto wide = speed_diagnosis(launches, figures);
    REQUIRE(wide);
    CHECK(wide->category == "slow, with nothing standing out");
}

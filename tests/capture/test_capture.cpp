// The capture runtime against real nvcc output (launches.cu), on a machine with or without a GPU: it never uses one.
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <vector>

#include "capture/runner.hpp"
#include "capture/tables.hpp"
#include "catch.hpp"

#include "capture/capture_runtime.hpp"
#include "capture/work_record.hpp"

extern "C" {
void permitted_calls(const float* input, std::size_t n, float* result, float* scratch, cudaStream_t stream);
cudaError_t reads_back(float* result, cudaStream_t stream);
cudaError_t allocates(std::size_t bytes);
int occupancy(int block_size);
}

namespace capture = cugrade::capture;

namespace {

const std::string partial_sums = "_Z12partial_sumsILi256EEvPKfmPf";
const std::string finish = "_Z6finishPff";

// The parameter sizes the checker reads from the loaded module, and an H100's occupancy limits.
std::map<std::string, capture::KernelInfo> kernel_table() {
    capture::KernelInfo partial_info{{8, 8, 8}, {}};
    partial_info.attributes.numRegs = 32;
    partial_info.attributes.maxThreadsPerBlock = 1024;
    return {{partial_sums, partial_info}, {finish, {{8, 4}, {}}}};
}

capture::DeviceInfo device_table() {
    capture::DeviceInfo device;
    device.properties.major = 9;
    device.properties.minor = 0;
    device.properties.warpSize = 32;
    device.properties.multiProcessorCount = 132;
    device.properties.maxThreadsPerBlock = 1024;
    device.properties.maxThreadsPerMultiProcessor = 2048;
    device.properties.maxBlocksPerMultiProcessor = 32;
    device.properties.regsPerMultiprocessor = 65536;
    device.properties.regsPerBlock = 65536;
    device.properties.sharedMemPerMultiprocessor = 233472;
    device.properties.sharedMemPerBlock = 49152;
    device.properties.sharedMemPerBlockOptin = 232448;
    device.properties.reservedSharedMemPerBlock = 1024;
    device.attributes[cudaDevAttrMultiProcessorCount] = 132;
    return device;
}

void tell_the_runtime() {
    capture::set_kernels(kernel_table());
    capture::set_device(device_table());
    capture::take_work();
}

float* device_address(std::uintptr_t value) { return reinterpret_cast<float*>(value); }

}  // namespace

TEST_CASE("the submission's kernels are known by their device names") {
    const auto kernels = capture::registered_kernels();
    CHECK(kernels == std::vector<std::string>{partial_sums, finish});
}

TEST_CASE("a call's work is recorded in order, with each argument's bytes") {
    tell_the_runtime();
    permitted_calls(device_address(0x7f0000000000), 1000, device_address(0x7f0000100000),
                    device_address(0x7f0000200000), nullptr);
    const auto taken = capture::take_work();
    CHECK(taken["refused"].empty());
    const auto& work = taken["work"];
    REQUIRE(work.size() == 4);
    CHECK(work[0]["op"] == "symbol_upload");
    CHECK(work[0]["symbol"] == "weights");
    CHECK(work[0]["data"] == "0000803f000000400000404000008040");
    CHECK(work[1]["op"] == "memset");
    CHECK(work[1]["address"] == 0x7f0000100000ull);
    CHECK(work[1]["width"] == 4);
    CHECK(work[2]["op"] == "kernel");
    CHECK(work[2]["name"] == partial_sums);
    CHECK(work[2]["grid"] == nlohmann::json::array({4, 1, 1}));
    CHECK(work[2]["block"] == nlohmann::json::array({256, 1, 1}));
    CHECK(work[2]["arguments"] == nlohmann::json::array({"00000000007f0000", "e803000000000000", "00002000007f0000"}));
    CHECK(work[3]["name"] == finish);
    CHECK(work[3]["arguments"][1] == cugrade::work_record::to_hex("\x00\x00\x20\x40", 4));
    CHECK(capture::take_work()["work"].empty());
}

TEST_CASE("calls that need the device's answer are refused, with the reason") {
    tell_the_runtime();
    CHECK(reads_back(device_address(0x7f0000100000), nullptr) == cudaErrorNotSupported);
    CHECK(allocates(1 << 20) == cudaErrorNotSupported);
    const auto taken = capture::take_work();
    REQUIRE(taken["refused"].size() == 2);
    CHECK(taken["refused"][0]["call"] == "cudaMemcpyAsync");
    CHECK(taken["refused"][0]["why"] ==
          "reads device memory from the host; compute on the GPU and leave the results in the buffers you are given");
    CHECK(taken["refused"][1]["call"] == "cudaMalloc");
    CHECK(taken["refused"][1]["why"] == "allocates device memory; use the scratch memory you are given");
    CHECK(taken["work"].empty());
}

// A refusal may become the reason every case of the submission is rejected for, hidden cases' included: it names the
// limit, never the size of the call that broke it.
TEST_CASE("an upload over the limit is refused without its size") {
    tell_the_runtime();
    const std::vector<unsigned char> table(std::size_t{1} << 20);
    for (const std::size_t bytes : {cugrade::work_record::max_upload_bytes + 1, table.size()}) {
        CHECK(cudaMemcpyAsync(device_address(0x7f0000100000), table.data(), bytes, cudaMemcpyHostToDevice, nullptr) ==
              cudaErrorNotSupported);
    }
    const auto taken = capture::take_work();
    REQUIRE(taken["refused"].size() == 2);
    for (const auto& refused : taken["refused"]) {
        CHECK(refused["why"] == "copies more than 65536 bytes from the host in one call; upload a small table only");
    }
    CHECK(taken["work"].empty());
}

TEST_CASE("occupancy queries are answered from the checker's device") {
    tell_the_runtime();
    CHECK(occupancy(256) == 8);  // 2048 threads per SM
    CHECK(occupancy(1024) == 2);
    CHECK(capture::take_work()["refused"].empty());
}

TEST_CASE("hexadecimal argument bytes survive the round trip") {
    const unsigned char bytes[] = {0x00, 0x7f, 0x80, 0xff};
    const std::string text = cugrade::work_record::to_hex(bytes, sizeof bytes);
    CHECK(text == "007f80ff");
    CHECK(cugrade::work_record::from_hex(text) == std::vector<unsigned char>(bytes, bytes + 4));
    CHECK_THROWS_WITH(cugrade::work_record::from_hex("0g"), "not a hexadecimal digit: 'g'");
}

TEST_CASE("a call's arguments reach the runner as JSON of their own kind, and read back as the entry point's types") {
    const float scale = 0.1f;
    const nlohmann::json arguments = cugrade::runner::encode_arguments(device_address(0x7f0000000000), std::size_t{300},
                                                                       -7, scale, true, cudaStream_t{});
    CHECK(arguments == nlohmann::json::parse(R"([139637976727552, 300, -7, 0.10000000149011612, true, null])"));
    CHECK(arguments[0].is_number_unsigned());
    CHECK(arguments[1].is_number_unsigned());
    CHECK(arguments[2].is_number_integer());
    CHECK_FALSE(arguments[2].is_number_unsigned());
    CHECK(arguments[3].is_number_float());
    const auto decoded = cugrade::runner::decode_arguments<const float*, std::size_t, int, float, bool, cudaStream_t>(
        arguments, std::make_index_sequence<6>{});
    CHECK(reinterpret_cast<std::uintptr_t>(std::get<0>(decoded)) == 0x7f0000000000);
    CHECK(std::get<1>(decoded) == 300);
    CHECK(std::get<2>(decoded) == -7);
    CHECK(std::get<3>(decoded) == scale);
    CHECK(std::get<4>(decoded));
    CHECK(std::get<5>(decoded) == nullptr);
}

TEST_CASE("the runner says how it is contained, answers each call with its work, and ends when the checker hangs up") {
    int channel[2];
    REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, channel) == 0);
    const pid_t runner = fork();
    REQUIRE(runner >= 0);
    if (runner == 0) {
        const int fd = dup(channel[1]);  // without close-on-exec
        setenv(cugrade::runner::runner_fd_env, std::to_string(fd).c_str(), 1);
        execl(CUGRADE_CAPTURE_RUNNER, CUGRADE_CAPTURE_RUNNER, static_cast<char*>(nullptr));
        _exit(127);
    }
    close(channel[1]);
    std::FILE* to_runner = fdopen(dup(channel[0]), "w");
    std::FILE* from_runner = fdopen(channel[0], "r");
    const nlohmann::json call = {
        {"arguments", cugrade::runner::encode_arguments(device_address(0x7f0000000000), std::size_t{300},
                                                        device_address(0x7f0000100000), device_address(0x7f0000200000),
                                                        cudaStream_t{})}};
    std::fprintf(to_runner, "%s\n%s\n%s\n", capture::tables_to_json(kernel_table(), device_table()).dump().c_str(),
                 call.dump().c_str(), call.dump().c_str());
    std::fflush(to_runner);
    std::string line;
    REQUIRE(cugrade::runner::read_line(from_runner, line));
    const auto protections = nlohmann::json::parse(line).at("protections");
    REQUIRE(protections.size() == 1);
    CHECK(protections[0].get<std::string>().find("submission's process") != std::string::npos);
    for (int reply = 0; reply < 2; ++reply) {
        REQUIRE(cugrade::runner::read_line(from_runner, line));
        const auto taken = nlohmann::json::parse(line);
        CHECK(taken["refused"].empty());
        REQUIRE(taken["work"].size() == 4);
        CHECK(taken["work"][2]["grid"] == nlohmann::json::array({2, 1, 1}));
        CHECK(taken["work"][2]["arguments"][1] == "2c01000000000000");  // n = 300
    }
    std::fclose(to_runner);
    shutdown(channel[0], SHUT_WR);  // the checker hangs up
    CHECK_FALSE(cugrade::runner::read_line(from_runner, line));
    std::fclose(from_runner);
    int status = 0;
    REQUIRE(waitpid(runner, &status, 0) == runner);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
}

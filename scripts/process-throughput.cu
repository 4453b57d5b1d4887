// One CUDA process's life, as a harness process lives it: a context made, a little device memory, one small kernel,
// the end. `fault` makes the kernel write where no allocation is (an illegal address), as a submission that faults
// does: the context is lost and the process ends. scripts/process-throughput.sh starts many of these at once.
#include <cuda_runtime.h>

#include <cstring>

__global__ void touch(int* out, int fault) {
    if (fault != 0) {
        *reinterpret_cast<volatile int*>(0x10) = 1;
    }
    out[threadIdx.x] = static_cast<int>(threadIdx.x);
}

int main(int argc, char** argv) {
    const int fault = argc > 1 && std::strcmp(argv[1], "fault") == 0 ? 1 : 0;
    int* out = nullptr;
    if (cudaMalloc(&out, 256 * sizeof(int)) != cudaSuccess) {
        return 2;
    }
    touch<<<1, 256>>>(out, fault);
    const bool failed = cudaDeviceSynchronize() != cudaSuccess;
    return failed == (fault != 0) ? 0 : 1;
}

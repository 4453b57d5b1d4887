// A kernel on shared memory, then a pause in which scripts/racecheck-memory.sh reads this process's memory map.
#include <cstdio>
#include <cstdlib>
#include <unistd.h>
__global__ void touch(float* out) {
    __shared__ float s[256];
    s[threadIdx.x] = threadIdx.x;
    __syncthreads();
    out[threadIdx.x] = s[255 - threadIdx.x];
}
int main(int argc, char** argv) {
    float* out;
    cudaMalloc(&out, 256 * sizeof(float));
    touch<<<1, 256>>>(out);
    cudaDeviceSynchronize();
    std::printf("ready\n");
    std::fflush(stdout);
    if (argc > 1) sleep(std::atoi(argv[1]));
    return 0;
}

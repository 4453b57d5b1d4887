// What scripts/racecheck-reports.sh runs under racecheck: a kernel that races on shared memory (no barrier between
// a write and another thread's read), launched L times (argv[1], default 1), a marker line before each launch.
#include <cstdio>
#include <cstdlib>
__global__ void racy(float* out, int n) {
    __shared__ float s[256];
    s[threadIdx.x] = threadIdx.x;
    // missing __syncthreads()
    float v = s[(threadIdx.x + 1) % 256];
    if (blockIdx.x * 256 + threadIdx.x < n) out[blockIdx.x * 256 + threadIdx.x] = v;
}
int main(int argc, char** argv) {
    int launches = argc > 1 ? std::atoi(argv[1]) : 1;
    float* out;
    cudaMalloc(&out, 4096 * sizeof(float));
    for (int k = 0; k < launches; ++k) {
        std::printf("launch %d\n", k);
        std::fflush(stdout);
        racy<<<16, 256>>>(out, 4096);
        cudaDeviceSynchronize();
    }
    std::printf("done\n");
    return 0;
}

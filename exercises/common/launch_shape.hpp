// One kernel launch as it was made: the kernel and the launch's shape, for the profile's launch metrics.
#pragma once

#include <cuda.h>

#include <string>

namespace cugrade {

struct LaunchShape {
    std::string name;
    CUfunction function = nullptr;
    unsigned grid[3] = {1, 1, 1}, block[3] = {1, 1, 1}, shared_bytes = 0;
};

}  // namespace cugrade

// A device buffer of the case that recorded work may touch (replay.hpp); the CPU self-check names it too.
#pragma once

#include <cstdint>

namespace cugrade::replay {

struct DeviceRange {
    std::uint64_t begin = 0;
    std::uint64_t bytes = 0;
    bool writable = false;
};

}  // namespace cugrade::replay

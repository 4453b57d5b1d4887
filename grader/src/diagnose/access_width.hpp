// How wide each kernel's global loads and stores are, read from its machine code (`cuobjdump -sass`). The checker's
// own counters say how many 32-byte sectors a warp's request fetched, not how many bytes it asked for: 16 sectors are
// a warp's coalesced 16-byte loads, or its 4-byte loads spread over 16 rows with a quarter of each sector used. The
// width of the kernel's accesses tells the two apart (speed_profile.hpp).
#pragma once

#include <string>

#include "diagnose/speed_profile.hpp"

namespace cugrade {

// The widths in `cuobjdump -sass` output, by kernel name without its parameters ("add_2d"); a kernel without global
// loads or stores has 0 for them.
KernelAccessWidths read_access_widths(const std::string& sass);

}  // namespace cugrade

// Whether a submission's kernels can touch shared memory, read from their machine code. racecheck looks for races on
// shared memory alone (and on what copies into it), so where no kernel can reach it, a race check could report
// nothing and its process (about a second of a worker, a quarter of a second of what a class's GPU does one process
// at a time: docs/performance-history.md) is left out.
#pragma once

#include <optional>
#include <string>

namespace cugrade {

// False only where the listing (`cuobjdump -sass`) holds kernels and none has an instruction that can reach shared
// memory: its loads, stores and atomics, the copies and barriers that work on it, the matrix instructions that read
// it, and the generic loads, stores and atomics, whose address may be a shared one.
bool sass_may_touch_shared_memory(const std::string& listing);

// The same, of a listing that may be missing (sass_listing_of): true where there is none.
bool may_touch_shared_memory(const std::optional<std::string>& listing);

}  // namespace cugrade

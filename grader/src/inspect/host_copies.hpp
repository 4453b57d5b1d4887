// The contract's rule on host copies (exercise.yaml's `rules.host_copies`), checked where the submission shows it
// before any of its code runs: a source that names the copy kind that reads device memory on the host, or an object
// that calls a function whose only work is to copy device memory to the host. What hides from this (a kind computed
// at run time) the runner's capture refuses when the call is made (capture/host_rules.hpp).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "course/contract_rules.hpp"
#include "inspect/inspect.hpp"
#include "build/object_file.hpp"

namespace cugrade {

// Where a name is first used in the submission's source, comments aside, as "FILE:LINE"; "" where it is not.
using FirstUse = std::function<std::string(const std::string& name)>;

// The findings (rule "host-copy") of a submission whose exercise refuses host copies; none otherwise. `file` is the
// submission's path as the user gave it, for a finding whose line the source does not show.
std::vector<Finding> host_copy_findings(const ContractRules& contract, const ObjectFile& object,
                                        const FirstUse& first_use, const std::string& file);

}  // namespace cugrade

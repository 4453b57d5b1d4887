// One kernel launch as the checker's counters profiled it (counter_profile.hpp), as a case reports it
// (case_outcome.hpp). Plain C++.
#pragma once

#include <map>
#include <string>

namespace cugrade::harness {

// Its metrics by name, in base units (ns, bytes).
struct ProfiledLaunch {
    std::string name;
    std::map<std::string, double> metrics;
};

}  // namespace cugrade::harness

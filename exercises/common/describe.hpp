// Numbers as a report shows them: enough digits to tell two floats apart, and "nan" for any NaN. Plain C++.
#pragma once

#include <cmath>
#include <sstream>
#include <string>

namespace cugrade::harness {

inline std::string describe_number(double value) {
    if (std::isnan(value)) {
        return "nan";
    }
    std::ostringstream text;
    text.precision(9);
    text << value;
    return text.str();
}

}  // namespace cugrade::harness

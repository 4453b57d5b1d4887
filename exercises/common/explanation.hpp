// What a wrong answer is, when the harness can tell: the right total less its last element, a minimum and maximum
// swapped, a matrix wrong only in its last partial tile. The harness sends it beside the wrong answer's detail
// (protocol.hpp: "explanation", written by the case loop, plan_loop.cpp), and the grader shows it as the case's
// diagnosis. Plain C++.
#pragma once

#include <string>
#include <vector>

namespace cugrade::harness {

struct Explanation {
    // The cause, with nothing of the case's size or input: a hidden case's explanation shows only this and the hint.
    std::string summary;
    // The cause in the same words for every submission it fits, for a class's counts; empty where the explanation
    // only describes (where a matrix's wrong elements lie).
    std::string category;
    std::string hint;
    std::string topic;                  // one of the grader's diagnosis topics (diagnosis.hpp), or empty
    std::vector<std::string> evidence;  // what shows it: indices, values, the rows and columns of the wrong elements
    std::vector<std::string> map;       // a picture of where the wrong elements lie, a line each
};

}  // namespace cugrade::harness

// A case's result record (protocol.hpp's "result"): what the case reported (case_outcome.hpp) in the JSON the grader
// reads, every measurement's kind kept (integer, unsigned, float, flag). Host code only: the case loop
// (plan_loop.cpp) writes it.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>

#include "case_outcome.hpp"

namespace cugrade::harness {

nlohmann::json result_record(const std::string& case_id, const CaseOutcome& outcome);

}  // namespace cugrade::harness

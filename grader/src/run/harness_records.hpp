// The records a harness process sends on its result channel, as the run loop reads them: the secret that marks them
// the harness's own, what a "gpu" record asks for, and the protections a "ready" record names.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "schedule/gpu_gate.hpp"

namespace cugrade {

// A secret for one harness process: records that lack it are not the harness's.
std::string make_token();

// What a harness's "gpu" record asks for.
GpuGate::Use requested_use(const nlohmann::json& record);

// The protections a "ready" record names.
std::vector<std::string> protections_of(const nlohmann::json& record);

// Adds what a process said it applied, each once.
void add_protections(std::vector<std::string>& kept, const std::vector<std::string>& said);

}  // namespace cugrade

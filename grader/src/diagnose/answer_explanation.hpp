// A harness's explanation of a wrong answer (exercises/common/explanation.hpp), read back as the case's diagnosis.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>

#include "base/diagnosis.hpp"

namespace cugrade {

// The "explanation" of a result record as a diagnosis of kind "answer", its texts cut to a report's size and its
// topic kept only if it is one of diagnosis_topics; nothing when the record has none or it has no summary. The
// harness shares its process with the submission, so the record is read as untrusted text.
std::optional<Diagnosis> answer_diagnosis(const nlohmann::json& record);

}  // namespace cugrade

// Python's `json.dumps(value, ensure_ascii=False)` for a parsed JSON value: ", " and ": "
// separators, keys in stored order, non-ASCII kept, floats as Python's repr. MaskBench serialises
// its instances this way, and enum/const literals must spell values the same way.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace qwenrt {

void AppendPythonJson(const nlohmann::ordered_json& value, std::string* out);

}  // namespace qwenrt

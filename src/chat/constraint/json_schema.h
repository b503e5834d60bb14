// JSON Schema -> GBNF text. Objects list their properties in the schema's order (optional ones may
// be skipped; other keys, when allowed, come after them and may not spell a declared name), arrays
// follow prefixItems / items / minItems / maxItems, strings follow length, pattern or format, and
// numbers their bounds. Every keyword that constrains instances and cannot be enforced exactly is
// an error "<json pointer>: <keyword>: ...". The full keyword table is in docs/constraints.md.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"
#include "chat/constraint/grammar.h"

namespace qwenrt {

StatusOr<std::string> JsonSchemaToGbnf(std::string_view schema_text,
                                       const JsonSchemaOptions& options);

}  // namespace qwenrt

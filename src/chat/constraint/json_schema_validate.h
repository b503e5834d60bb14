// A JSON Schema validator for one concrete value: the compiler's way to decide `enum`/`const`
// values against the rest of their schema, and `not X` over such values, where no grammar of X
// could say what X rejects. Three answers, because `not` turns a wrong "valid" into a wrong
// "invalid": kUnknown whenever the answer is not certain, and the caller then refuses as before.
//
// Decided: type, enum, const, allOf / anyOf / oneOf / not, if / then / else, local $ref, the
// object keywords (properties, required, additionalProperties, patternProperties, propertyNames,
// min/maxProperties, dependencies, dependentRequired, dependentSchemas), the array keywords
// (items in both forms, prefixItems, additionalItems, min/maxItems, uniqueItems, contains with
// min/maxContains), the string keywords (min/maxLength in code points, pattern), the number
// keywords (minimum / maximum and their exclusive forms of every draft, multipleOf). Unknown:
// format (an annotation or an assertion depending on the validator), unevaluated*, remote or
// anchor references, a pattern this library's regex translation refuses or a string it cannot
// see through (characters JSON must escape), multipleOf on decimals beyond 18 digits (it is
// decided on the decimals the document wrote: 0.0075 is a multiple of 0.0001), numbers beyond
// 2^53, a walk past its budget (a $ref cycle, a hostile document).
#pragma once

#include "text/json.h"

namespace qwenrt::schema {

enum class Verdict { kValid, kInvalid, kUnknown };

// `schema` is a node of the document `root` (for $ref).
Verdict Validate(const Json& root, const Json& schema, const Json& value);

}  // namespace qwenrt::schema

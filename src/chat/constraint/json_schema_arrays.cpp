// JSON Schema compiler: arrays, prefixItems / items / minItems / maxItems (see
// json_schema_compiler.h).
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "chat/constraint/json_schema_compiler.h"

namespace qwenrt::schema {

std::string SchemaCompiler::CompileArray(const Json& s, const std::string& ptr) {
  std::vector<std::string> prefix;
  std::string rest = "jvalue";
  bool rest_allowed = true;
  auto item_rule = [&](const Json& sub, const std::string& p) -> std::string {
    if (sub.is_boolean() && !sub.get<bool>()) return "";
    return CompileOrNever(sub, p);
  };
  if (s.contains("prefixItems")) {
    const Json& pi = s["prefixItems"];
    for (size_t i = 0; i < pi.size(); ++i)
      prefix.push_back(item_rule(pi[i], ptr + "/prefixItems/" + std::to_string(i)));
    if (s.contains("items")) {
      rest = item_rule(s["items"], ptr + "/items");
      rest_allowed = !rest.empty();
    }
  } else if (s.contains("items") && s["items"].is_array()) {  // draft 4 tuple form
    const Json& pi = s["items"];
    for (size_t i = 0; i < pi.size(); ++i)
      prefix.push_back(item_rule(pi[i], ptr + "/items/" + std::to_string(i)));
    if (s.contains("additionalItems")) {
      rest = item_rule(s["additionalItems"], ptr + "/additionalItems");
      rest_allowed = !rest.empty();
    }
  } else if (s.contains("items")) {
    rest = item_rule(s["items"], ptr + "/items");
    rest_allowed = !rest.empty();
  }
  int64_t min = 0, max = -1;
  if (s.contains("minItems")) min = static_cast<int64_t>(s["minItems"].get<double>());
  if (s.contains("maxItems")) max = static_cast<int64_t>(s["maxItems"].get<double>());
  if (min > 10000 || max > 10000) Error(ptr, "maxItems", "count too large");
  // A false prefix item stops the array before it.
  int64_t limit = rest_allowed ? -1 : static_cast<int64_t>(prefix.size());
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (prefix[i].empty()) {
      limit = static_cast<int64_t>(i);
      prefix.resize(i);
      break;
    }
  }
  if (limit >= 0 && (max < 0 || max > limit)) max = limit;
  if (max >= 0 && min > max) Error(ptr, "minItems", "no array length satisfies the schema");
  const int64_t explicit_n = std::max<int64_t>(static_cast<int64_t>(prefix.size()), min);
  const int64_t n = max >= 0 ? std::min(explicit_n, max) : explicit_n;
  auto item_at = [&](int64_t j) {
    return j < static_cast<int64_t>(prefix.size()) ? prefix[j] : rest;
  };
  // Tail after position n.
  std::string tail;
  const std::string sep = "ws \",\" ws ";
  if (max < 0 || max > n) {
    const std::string reps = max < 0 ? "*" : "{0," + std::to_string(max - n) + "}";
    if (n == 0) {
      tail = NewRule("(" + rest + " (" + sep + rest + ")" +
                     (max < 0 ? "*" : "{0," + std::to_string(max - 1) + "}") + ")?");
    } else {
      tail = NewRule("(" + sep + rest + ")" + reps);
    }
  } else {
    tail = NewRule("\"\"");
  }
  std::string next = tail;
  for (int64_t j = n - 1; j >= 0; --j) {
    std::string body = (j > 0 ? sep : "") + item_at(j) + " " + next;
    if (j >= min) body += " | \"\"";
    next = NewRule(body);
  }
  return NewRule("\"[\" ws " + next + " ws \"]\"");
}

}  // namespace qwenrt::schema

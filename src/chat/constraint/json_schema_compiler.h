// The JSON Schema compiler (see json_schema.h): one class, its member functions defined in one file
// per kind of schema they compile:
//   json_schema.cpp              entry, dispatch by keyword, const / enum values, type lists
//   json_schema_refs.cpp         $ref resolution and the allOf merge
//   json_schema_combinators.cpp  not, and the disjointness oneOf needs
//   json_schema_numbers.cpp      numbers and integers: bounds, multipleOf
//   json_schema_strings.cpp      strings: length, pattern, format
//   json_schema_arrays.cpp       arrays: prefixItems, items, minItems / maxItems
//   json_schema_objects.cpp      objects: properties, required, additional and pattern properties
// Internal to src/chat/constraint/; JsonSchemaToGbnf (json_schema.h) is the interface.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "chat/constraint/matcher.h"
#include "chat/constraint/number_range.h"
#include "chat/constraint/token_trie.h"
#include "text/json.h"

namespace qwenrt::schema {

// Lexical rules every schema grammar shares.
inline constexpr const char* kBaseRules = R"(jhex ::= [0-9a-fA-F]
jchar ::= [^"\\\x00-\x1F] | "\\" (["\\/bfnrt] | "u" ([0-9a-cA-Ce-fE-F] jhex jhex jhex | [dD] [0-7] jhex jhex | [dD] [89abAB] jhex jhex "\\u" [dD] [c-fC-F] jhex jhex))
jstring ::= "\"" jchar* "\""
jnumber ::= "-"? ("0" | [1-9] [0-9]*) ("." [0-9]+)? ([eE] [+-]? [0-9]+)?
jinteger ::= "-"? ("0" | [1-9] [0-9]*)
jboolean ::= "true" | "false"
jnull ::= "null"
jvalue ::= jobject | jarray | jstring | jnumber | jboolean | jnull
jobject ::= "{" ws (jstring ws ":" ws jvalue (ws "," ws jstring ws ":" ws jvalue)*)? ws "}"
jarray ::= "[" ws (jvalue (ws "," ws jvalue)*)? ws "]"
)";

// What SchemaCompiler throws on an error (Run turns it into the status).
struct Fail {
  Status status;
  bool unsatisfiable;  // the schema matches nothing (an optional place for it can be dropped)
};

// A keyword that never constrains instances: an annotation, identifier or vocabulary (title,
// $id, $defs, ...), one of the editors' annotation keywords (VS Code's markdownDescription and
// friends) or a vendor extension ("x-" prefix, which JSON Schema leaves to annotations). Compiling
// ignores it, and allOf members that differ in it do not conflict.
bool IsAnnotation(std::string_view keyword);
// Keywords that constrain instances but which this compiler does not enforce.
const std::set<std::string>& Unsupported();
std::string GbnfLiteral(std::string_view bytes);
const char* TypeOf(const Json& v);
bool TypeMatches(const std::string& type, const Json& v);
std::string PointerEscape(const std::string& key);
// A local $ref ("#", "#/json/pointer", percent-decoded) inside `root`: the schema it names and, in
// *decoded, its pointer; null with the reason in *why otherwise (other documents, anchors,
// unresolved pointers).
const Json* ResolveLocalRef(const Json& root, const std::string& ref, std::string* decoded,
                            std::string* why);
// Matcher budgets for checking one short text (an enum value, a string under `pattern`):
// small, and a text the matcher gives up on counts as rejected.
Matcher::Limits ShortTextLimits();
// The 256 single bytes as tokens: for matching short texts byte by byte (KeyMatches, enum values).
const std::shared_ptr<const TokenTrie>& SingleByteTrie();

// Compiles one schema document to GBNF text: one rule per schema node (memoised by JSON pointer for
// $ref, so recursive schemas become recursive rules). Errors are thrown as Fail inside and returned
// by Run as a status.
class SchemaCompiler {
 public:
  SchemaCompiler(const Json& root, bool compact) : root_(root), compact_(compact) {}

  StatusOr<std::string> Run();

 private:
  // json_schema.cpp: the rule table, the dispatch by keyword, const / enum values, type lists.
  [[noreturn]] static void Error(const std::string& ptr, const std::string& kw,
                                 const std::string& what, bool unsatisfiable = false);
  // What a failed attempt rolls back: rules written, $ref rules, depths.
  struct Mark {
    size_t rules_size;
    std::map<std::string, std::string> ref_rules;
    int depth, merge_depth;
  };
  Mark Save() const;
  void Restore(const Mark& m);
  std::string CompileOrNever(const Json& s, const std::string& ptr);
  bool MergeOrNever(Json* a, const Json& b, const std::string& ptr);
  std::string NewRule(const std::string& body);
  std::string Compile(const Json& s, const std::string& ptr);
  std::string CompileInner(const Json& s, const std::string& ptr);
  std::string ValueLiteral(const Json& v);
  std::vector<Json> KeepAccepted(const std::vector<Json>& values, const Json& rest,
                                 const std::string& ptr);
  // The whole grammar text: `root ::= start`, the whitespace and lexical rules, the rules so far.
  std::string GrammarText(const std::string& start) const;
  std::string CompileType(const Json& s, const std::string& type, const std::string& ptr);

  // json_schema_refs.cpp
  const Json& Resolve(const std::string& ref, const std::string& ptr, std::string* target);
  void Merge(Json* a, const Json& b_in, const std::string& ptr);

  // json_schema_combinators.cpp
  std::string CompileNot(const Json& s, const std::string& ptr);
  std::string CompileIf(const Json& s, const std::string& ptr);
  bool ObjectsDisjoint(const Json& a, const Json& b);
  void CheckDisjoint(const std::vector<Json>& branches, const std::string& ptr);
  bool OneOfByRequired(const Json& siblings, const Json& branches, const std::string& ptr,
                       std::vector<Json>* out);
  bool OneOfByPresence(const Json& siblings, const Json& branches, const std::string& ptr,
                       std::vector<Json>* out);

  // json_schema_numbers.cpp
  std::string CompileNumber(const Json& s, bool integer, const std::string& ptr);
  std::string CompileMultiple(const Json& s, const NumberBounds& b, const std::string& ptr);

  // json_schema_strings.cpp
  std::string CompileString(const Json& s, const std::string& ptr);
  bool StringsDisjoint(const Json& a, const Json& b);
  std::string CompileRegexProduct(const std::vector<std::string>& regexes, int64_t min_len,
                                  int64_t max_len, const std::string& ptr, const char* kw);
  static const std::set<std::string>& KnownFormats();
  static Json WithoutFormat(const Json& s);
  static std::string FormatRegex(const std::string& f);

  // json_schema_arrays.cpp
  std::string CompileArray(const Json& s, const std::string& ptr);

  // json_schema_objects.cpp
  std::string OtherKey(const std::vector<std::string>& keys);
  // Objects with few declared properties take them in any order: one rule per set of properties
  // already written (2^n of them), each property at most once, the end only once every required one
  // is there; other keys may come anywhere.
  static constexpr size_t kMaxFreeOrder = 6;
  // minProperties / maxProperties over other keys only: repetition bounds up to this.
  static constexpr int64_t kMaxCountedProperties = 64;
  struct KeyValue {
    std::string rule;  // `"key" ws ":" ws value`
    bool required;
  };
  template <class P>
  std::vector<KeyValue> props_kv(const std::vector<P>& props);
  // What the any-order object enforces beyond `required`, over sets of written properties.
  struct ObjectLimits {
    // (trigger bit, bits): once the trigger is written, the object ends only after those
    // (property dependencies).
    std::vector<std::pair<uint32_t, uint32_t>> implied;
    // minProperties / maxProperties: the declared properties written plus the other keys (those
    // of extra_kv, counted up to the bound that matters).
    int64_t min_count = 0;
    int64_t max_count = INT64_MAX;
  };
  std::string FreeOrderObject(const std::vector<KeyValue>& kvs, const std::string& extra_kv,
                              const ObjectLimits& limits, const std::string& ptr);
  std::string OrderedObject(const std::vector<KeyValue>& kvs, const std::string& tail_first,
                            const std::string& tail_rest,
                            const std::vector<std::pair<uint32_t, uint32_t>>& implied,
                            const std::string& ptr);
  static bool KeyMatches(const std::string& g, const std::string& key);
  std::string CompileObject(const Json& s, const std::string& ptr);

  const Json& root_;
  bool compact_;
  std::string rules_;
  std::map<std::string, std::string> ref_rules_;
  int n_ = 0;
  int depth_ = 0;
  int merge_depth_ = 0;
  // KeepAccepted compiles the rest of the schema in a child compiler, which can meet more enums
  // beside keywords through $ref: one budget for the whole document bounds that work (a hostile
  // schema would otherwise multiply it per level).
  static constexpr int kMaxValueChecks = 256;
  int own_checks_left_ = kMaxValueChecks;
  int* checks_left_ = &own_checks_left_;
};

}  // namespace qwenrt::schema

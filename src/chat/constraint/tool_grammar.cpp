// Building the tool-call grammar (see tool_grammar.h) as a rule set: the markup as byte literals,
// the special tokens as marker bytes, and each parameter's value grammar compiled by the GBNF /
// JSON Schema front ends and imported with its rules renamed.
#include "chat/constraint/tool_grammar.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "chat/constraint/json_schema.h"

namespace qwenrt {
namespace {

using Elems = std::vector<GrammarElement>;

constexpr uint8_t kOpenByte = Grammar::kMarkerFirst;  // <tool_call>
constexpr uint8_t kCloseByte = kOpenByte + 1;         // </tool_call>

// A verbatim string value: any text without "</" (so "</parameter>" cannot occur in it).
constexpr const char* kVerbatimText = "root ::= ([^<] | \"<\"+ [^</])* \"<\"*\n";

// Keywords of a "string" parameter that its verbatim value cannot be held to.
const std::set<std::string>& StringUnsupported() {
  static const std::set<std::string> k = {"minLength", "maxLength", "pattern",      "format", "not",
                                          "allOf",     "anyOf",     "oneOf",        "$ref",   "if",
                                          "then",      "else",      "contentSchema"};
  return k;
}

// Keywords of a function's `parameters` object this grammar enforces or that assert nothing;
// any other one is an error.
const std::set<std::string>& ParametersKnown() {
  static const std::set<std::string> k = {
      "type",    "properties",  "required", "additionalProperties",
      "$defs",   "definitions", "title",    "description",
      "$schema", "$id",         "$comment", "strict",
      "default", "examples"};
  return k;
}

class Builder {
 public:
  explicit Builder(const GrammarLimits& limits) : limits_(limits) {}

  int32_t NewRule(const std::string& name) {
    set_.names.push_back(name);
    set_.defined.push_back(true);
    set_.rules.emplace_back();
    return static_cast<int32_t>(set_.rules.size()) - 1;
  }
  void AddAlt(int32_t rule, Elems alt) { set_.rules[rule].push_back(std::move(alt)); }

  GrammarElement Bytes(const ByteSet& b) {
    auto [it, inserted] = byte_ids_.emplace(b.bits, static_cast<int32_t>(set_.byte_sets.size()));
    if (inserted) set_.byte_sets.push_back(b);
    return {GrammarElement::Kind::kBytes, it->second};
  }
  GrammarElement Byte(uint8_t c) {
    ByteSet b;
    b.Add(c);
    return Bytes(b);
  }
  static GrammarElement Ref(int32_t rule) { return {GrammarElement::Kind::kRule, rule}; }
  void Literal(std::string_view text, Elems* out) {
    for (char c : text) out->push_back(Byte(static_cast<uint8_t>(c)));
  }

  // Copies `g`'s rules in (names prefixed); `drop_lt` removes '<' from every byte set. Returns the
  // index of g's root.
  int32_t Import(const Grammar& g, const std::string& prefix, bool drop_lt) {
    const int32_t base = static_cast<int32_t>(set_.rules.size());
    for (const std::string& name : g.rule_names()) NewRule(prefix + name);
    const auto& elems = g.elements();
    for (size_t r = 0; r < g.alternatives().size(); ++r) {
      for (int32_t start : g.alternatives()[r]) {
        Elems alt;
        for (int32_t p = start; elems[p].kind != GrammarElement::Kind::kEnd; ++p) {
          if (elems[p].kind == GrammarElement::Kind::kRule) {
            alt.push_back(Ref(base + elems[p].index));
          } else {
            ByteSet b = g.byte_sets()[elems[p].index];
            if (drop_lt) b.bits['<' >> 6] &= ~(uint64_t{1} << ('<' & 63));
            alt.push_back(Bytes(b));
          }
        }
        AddAlt(base + static_cast<int32_t>(r), std::move(alt));
      }
    }
    return base + g.root();
  }

  Status CheckSize() const {
    int64_t n = 0;
    for (const auto& rule : set_.rules) {
      for (const auto& alt : rule) n += static_cast<int64_t>(alt.size()) + 1;
    }
    if (n > limits_.max_elements)
      return InvalidArgument("tools: grammar too large (more than {} elements)",
                             limits_.max_elements);
    return OkStatus();
  }

  Grammar::RuleSet& set() { return set_; }

 private:
  GrammarLimits limits_;
  Grammar::RuleSet set_;
  std::map<std::array<uint64_t, 4>, int32_t> byte_ids_;
};

// A byte-level listing of the rule set (Grammar::source()): literal bytes as text, other byte
// sets as hex ranges, the marker bytes by their token's name.
std::string Listing(const Grammar::RuleSet& set) {
  std::string out;
  for (size_t r = 0; r < set.rules.size(); ++r) {
    out += set.names[r] + " ::=";
    for (size_t a = 0; a < set.rules[r].size(); ++a) {
      out += a == 0 ? " " : " | ";
      if (set.rules[r][a].empty()) out += "\"\"";
      for (const GrammarElement& e : set.rules[r][a]) {
        if (e.kind == GrammarElement::Kind::kRule) {
          out += set.names[e.index] + " ";
          continue;
        }
        const ByteSet& b = set.byte_sets[e.index];
        std::vector<std::pair<int, int>> ranges;
        for (int c = 0; c < 256; ++c) {
          if (!b.Has(static_cast<uint8_t>(c))) continue;
          if (!ranges.empty() && ranges.back().second == c - 1)
            ranges.back().second = c;
          else
            ranges.push_back({c, c});
        }
        if (ranges.size() == 1 && ranges[0].first == ranges[0].second) {
          const int c = ranges[0].first;
          if (c == kOpenByte)
            out += "<tool_call> ";
          else if (c == kCloseByte)
            out += "</tool_call> ";
          else if (c > 0x20 && c < 0x7F && c != '"' && c != '\\')
            out += fmt::format("\"{}\" ", static_cast<char>(c));
          else
            out += fmt::format("[\\x{:02X}] ", c);
          continue;
        }
        out += "[";
        for (auto [lo, hi] : ranges) {
          out +=
              lo == hi ? fmt::format("\\x{:02X}", lo) : fmt::format("\\x{:02X}-\\x{:02X}", lo, hi);
        }
        out += "] ";
      }
    }
    out += "\n";
  }
  return out;
}

class ToolGrammarBuilder {
 public:
  ToolGrammarBuilder(const GrammarLimits& limits) : b_(limits), limits_(limits) {}

  StatusOr<std::shared_ptr<const Grammar>> Run(const Json& tools, const ToolChoice& choice,
                                               int32_t open, int32_t close) {
    if (open < 0 || close < 0)
      return InvalidArgument("tool_choice: the tokenizer has no <tool_call> / </tool_call> token");
    if (!tools.is_array() || tools.empty())
      return InvalidArgument("tool_choice {}: the chat has no tools",
                             ToolChoiceModeName(choice.mode));
    const int32_t root = b_.NewRule("root");
    const int32_t calls = b_.NewRule("calls");
    const int32_t call = b_.NewRule("call");
    std::set<std::string> names;
    for (size_t i = 0; i < tools.size(); ++i) {
      const Json& tool = tools[i];
      const std::string where = fmt::format("tools[{}]", i);
      if (!tool.is_object()) return InvalidArgument("{}: not an object", where);
      const bool wrapped = tool.contains("function");
      const Json& fn = wrapped ? tool["function"] : tool;
      const std::string fwhere = wrapped ? where + ".function" : where;
      if (!fn.is_object()) return InvalidArgument("{}: not an object", fwhere);
      const auto name = fn.find("name");
      if (name == fn.end() || !name->is_string() || name->get<std::string>().empty())
        return InvalidArgument("{}.name: missing or not a non-empty string", fwhere);
      const std::string n = name->get<std::string>();
      if (n.find_first_of("<>\n") != std::string::npos)
        return InvalidArgument(
            "{}.name: '{}' holds '<', '>' or a newline (the markup's delimiters)", fwhere, n);
      if (!names.insert(n).second) return InvalidArgument("{}.name: '{}' defined twice", fwhere, n);
      if (choice.mode == ToolChoiceMode::kFunction && n != choice.function) continue;
      Elems alt;
      QWENRT_RETURN_IF_ERROR(Function(fn, fwhere, i, &alt));
      b_.AddAlt(call, std::move(alt));
    }
    if (choice.mode == ToolChoiceMode::kFunction && !names.count(choice.function))
      return InvalidArgument("tool_choice: no tool is named '{}'", choice.function);
    // calls ::= call | call "\n" calls
    b_.AddAlt(calls, {Builder::Ref(call)});
    b_.AddAlt(calls, {Builder::Ref(call), b_.Byte('\n'), Builder::Ref(calls)});
    if (choice.mode == ToolChoiceMode::kAuto) {
      b_.AddAlt(root, {Builder::Ref(calls)});
    } else {  // the content may start with the newlines the template writes after </think>
      for (int nl = 0; nl <= 2; ++nl) {
        Elems alt;
        b_.Literal(std::string(static_cast<size_t>(nl), '\n'), &alt);
        alt.push_back(Builder::Ref(calls));
        b_.AddAlt(root, std::move(alt));
      }
    }
    QWENRT_RETURN_IF_ERROR(b_.CheckSize());
    Grammar::RuleSet& set = b_.set();
    set.root = root;
    set.special_tokens = {{open, kOpenByte}, {close, kCloseByte}};
    std::string listing = Listing(set);
    return Grammar::FromRuleSet(std::move(set), std::move(listing));
  }

 private:
  // <tool_call>\n<function=NAME>\n PARAMS </function>\n</tool_call>
  Status Function(const Json& fn, const std::string& where, size_t index, Elems* alt) {
    const std::string name = fn["name"].get<std::string>();
    alt->push_back(b_.Byte(kOpenByte));
    b_.Literal("\n<function=" + name + ">\n", alt);
    std::vector<std::pair<int32_t, bool>>
        params;  // (rule of "<parameter=K>\nV\n</parameter>\n", required)
    const auto ps = fn.find("parameters");
    if (ps != fn.end() && !ps->is_null()) {
      const std::string pwhere = where + ".parameters";
      if (!ps->is_object()) return InvalidArgument("{}: not an object", pwhere);
      for (const auto& [k, v] : ps->items()) {
        if (!ParametersKnown().count(k))
          return InvalidArgument("{}: {}: not supported in a tool's parameters", pwhere, k);
      }
      if (ps->contains("type") && (*ps)["type"] != "object")
        return InvalidArgument("{}: type: the parameters must be an object", pwhere);
      std::set<std::string> required;
      if (ps->contains("required")) {
        const Json& req = (*ps)["required"];
        if (!req.is_array()) return InvalidArgument("{}: required: not an array", pwhere);
        for (const Json& r : req) {
          if (!r.is_string()) return InvalidArgument("{}: required: not a string", pwhere);
          required.insert(r.get<std::string>());
        }
      }
      const Json props = ps->contains("properties") ? (*ps)["properties"] : Json::object();
      if (!props.is_object()) return InvalidArgument("{}: properties: not an object", pwhere);
      for (const std::string& r : required) {
        if (!props.contains(r))
          return InvalidArgument("{}: required: '{}' is not among the properties", pwhere, r);
      }
      size_t j = 0;
      for (const auto& [key, schema] : props.items()) {
        const std::string kwhere = fmt::format("{}.properties.{}", pwhere, key);
        if (key.empty() || key.find_first_of(">\n") != std::string::npos)
          return InvalidArgument("{}: the name is empty or holds '>' or a newline", kwhere);
        const std::string prefix = fmt::format("t{}p{}-", index, j++);
        StatusOr<int32_t> value = Value(*ps, schema, kwhere, prefix);
        if (!value.ok()) {
          if (required.count(key)) return value.status();
          if (value.status().message().find("matches nothing") == std::string::npos)
            return value.status();
          continue;  // an optional parameter no value can satisfy is left out
        }
        const int32_t rule = b_.NewRule(prefix + "param");
        Elems e;
        b_.Literal("<parameter=" + key + ">\n", &e);
        e.push_back(Builder::Ref(*value));
        b_.Literal("\n</parameter>\n", &e);
        b_.AddAlt(rule, std::move(e));
        params.push_back({rule, required.count(key) > 0});
      }
    }
    // rest_k ::= param_k rest_{k+1} (| rest_{k+1} when optional); rest_n ::= "".
    int32_t rest = b_.NewRule(fmt::format("t{}-end", index));
    b_.AddAlt(rest, {});
    for (size_t k = params.size(); k-- > 0;) {
      const int32_t r = b_.NewRule(fmt::format("t{}-from{}", index, k));
      b_.AddAlt(r, {Builder::Ref(params[k].first), Builder::Ref(rest)});
      if (!params[k].second) b_.AddAlt(r, {Builder::Ref(rest)});
      rest = r;
    }
    alt->push_back(Builder::Ref(rest));
    b_.Literal("</function>\n", alt);
    alt->push_back(b_.Byte(kCloseByte));
    return OkStatus();
  }

  // The rule of one parameter's VALUE.
  StatusOr<int32_t> Value(const Json& parameters, const Json& schema, const std::string& where,
                          const std::string& prefix) {
    if (schema.is_object() && schema.contains("type") && schema["type"] == "string") {
      // Verbatim (ParseToolCall keeps a "string" parameter's text as it is).
      for (const auto& [k, v] : schema.items()) {
        if (StringUnsupported().count(k))
          return InvalidArgument("{}: {}: not supported on a string parameter (written verbatim)",
                                 where, k);
      }
      if (schema.contains("enum") || schema.contains("const")) {
        std::vector<std::string> values;  // the allowed strings (const, then filtered by enum)
        if (schema.contains("const")) {
          if (schema["const"].is_string()) values.push_back(schema["const"].get<std::string>());
        } else if (!schema["enum"].is_array()) {
          return InvalidArgument("{}: enum: not an array", where);
        } else {
          for (const Json& v : schema["enum"]) {
            if (v.is_string()) values.push_back(v.get<std::string>());  // others never match
          }
        }
        if (schema.contains("const") && schema.contains("enum")) {
          if (!schema["enum"].is_array()) return InvalidArgument("{}: enum: not an array", where);
          std::erase_if(values, [&](const std::string& v) {
            return std::find(schema["enum"].begin(), schema["enum"].end(), Json(v)) ==
                   schema["enum"].end();
          });
        }
        const int32_t rule = b_.NewRule(prefix + "enum");
        for (const std::string& v : values) {
          if (v.find("</parameter>") != std::string::npos) continue;  // would end the value early
          Elems e;
          b_.Literal(v, &e);
          b_.AddAlt(rule, std::move(e));
        }
        if (b_.set().rules[rule].empty())
          return InvalidArgument("{}: enum: matches nothing a tool call can write", where);
        return rule;
      }
      if (verbatim_ < 0) {
        QWENRT_ASSIGN_OR_RETURN(auto text, Grammar::FromGbnf(kVerbatimText, limits_));
        verbatim_ = b_.Import(*text, "text-", false);
      }
      return verbatim_;
    }
    // JSON, with the parameters' definitions reachable from the property's own document.
    if (schema.is_boolean() && !schema.get<bool>())
      return InvalidArgument("{}: false: matches nothing", where);
    Json doc = schema;
    if (doc.is_object()) {
      for (const char* defs : {"$defs", "definitions"}) {
        if (parameters.contains(defs) && !doc.contains(defs)) doc[defs] = parameters[defs];
      }
    }
    JsonSchemaOptions options;
    options.limits = limits_;
    StatusOr<std::shared_ptr<const Grammar>> g = Grammar::FromJsonSchema(doc.dump(), options);
    if (!g.ok()) return InvalidArgument("{}: {}", where, g.status().message());
    return b_.Import(**g, prefix, /*drop_lt=*/true);
  }

  Builder b_;
  GrammarLimits limits_;
  int32_t verbatim_ = -1;
};

}  // namespace

const char* ToolChoiceModeName(ToolChoiceMode mode) {
  switch (mode) {
    case ToolChoiceMode::kFree:
      return "free";
    case ToolChoiceMode::kNone:
      return "none";
    case ToolChoiceMode::kAuto:
      return "auto";
    case ToolChoiceMode::kRequired:
      return "required";
    case ToolChoiceMode::kFunction:
      return "function";
  }
  return "free";
}

StatusOr<std::shared_ptr<const Grammar>> ToolCallGrammar(const Json& tools,
                                                         const ToolChoice& choice, int32_t open,
                                                         int32_t close,
                                                         const GrammarLimits& limits) {
  if (choice.mode != ToolChoiceMode::kAuto && choice.mode != ToolChoiceMode::kRequired &&
      choice.mode != ToolChoiceMode::kFunction) {
    return InvalidArgument("tool_choice {} has no grammar", ToolChoiceModeName(choice.mode));
  }
  try {
    ToolGrammarBuilder builder(limits);
    return builder.Run(tools, choice, open, close);
  } catch (const Json::TypeError& e) {
    return InvalidArgument("tools: {}", e.what());
  } catch (const std::bad_alloc&) {
    return OutOfMemory("tools: out of memory building the tool-call grammar");
  }
}

}  // namespace qwenrt

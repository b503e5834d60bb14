// `qwenrt-cli render`: renders chat cases with a model's chat template and prints them back as
// JSON with `rendered` (or `error`) added: the format of tests/data/chat/render-golden.json.
// Each case holds `messages`, optional `tools`, `add_generation_prompt`, `enable_thinking`, and
// optionally `extra` (more template variables); a case with a `context` object instead renders
// that object as the whole template context.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>

#include "cli_command.h"
#include "qwenrt/gguf.hpp"
#include "text/chat_template.h"

namespace qwenrt::cli {
namespace {

constexpr const char* kUsage =
    "render (--model M.gguf | --template T.jinja) --cases C.json [--out O.json]";

bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::ostringstream ss;
  ss << f.rdbuf();
  *out = ss.str();
  return static_cast<bool>(f) || f.eof();
}

bool LoadTemplateFromModel(const std::string& path, std::string* source) {
  gguf::Error err;
  auto file = gguf::File::Open(path, &err);
  if (!file) {
    std::fprintf(stderr, "render: cannot open %s: %s\n", path.c_str(), err.message.c_str());
    return false;
  }
  if (!file->GetString("tokenizer.chat_template", source, &err)) {
    std::fprintf(stderr, "render: %s: %s\n", path.c_str(), err.message.c_str());
    return false;
  }
  return true;
}

// The library's JSON type for a case read with nlohmann (which keeps the golden file's own
// formatting on the way out); a document that does not convert renders as an error.
StatusOr<Json> ToJson(const nlohmann::ordered_json& j) {
  return Json::Parse(j.dump(), Json::Limits{1 << 20}, "case");
}

StatusOr<std::string> RenderWith(const ChatTemplate& tmpl, const nlohmann::ordered_json& c) {
  if (c.contains("context")) {
    QWENRT_ASSIGN_OR_RETURN(const Json context, ToJson(c["context"]));
    return tmpl.Render(context);
  }
  std::optional<bool> thinking;
  if (c.contains("enable_thinking") && c["enable_thinking"].is_boolean())
    thinking = c["enable_thinking"].get<bool>();
  const bool gen = c.contains("add_generation_prompt") && c["add_generation_prompt"].is_boolean() &&
                   c["add_generation_prompt"].get<bool>();
  QWENRT_ASSIGN_OR_RETURN(const Json messages,
                          ToJson(c.value("messages", nlohmann::ordered_json::array())));
  QWENRT_ASSIGN_OR_RETURN(const Json tools, ToJson(c.value("tools", nlohmann::ordered_json())));
  QWENRT_ASSIGN_OR_RETURN(const Json extra, ToJson(c.value("extra", nlohmann::ordered_json())));
  return tmpl.RenderChat(messages, tools, gen, thinking, extra);
}

nlohmann::ordered_json RenderCase(const ChatTemplate& tmpl, nlohmann::ordered_json c) {
  c.erase("rendered");
  c.erase("error");
  StatusOr<std::string> out = Status(StatusCode::kInvalidArgument, "case is not an object");
  if (c.is_object()) out = RenderWith(tmpl, c);
  if (out.ok()) {
    c["rendered"] = *out;
  } else {
    c["error"] = out.status().message();
  }
  return c;
}

int Run(int argc, char** argv) {
  std::string model, template_path, cases_path, out_path;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](std::string* dst) {
      if (i + 1 >= argc) return false;
      *dst = argv[++i];
      return true;
    };
    bool ok = true;
    if (a == "--model")
      ok = value(&model);
    else if (a == "--template")
      ok = value(&template_path);
    else if (a == "--cases")
      ok = value(&cases_path);
    else if (a == "--out")
      ok = value(&out_path);
    else
      ok = false;
    if (!ok) {
      std::fprintf(stderr, "usage: qwenrt-cli %s\n", kUsage);
      return 2;
    }
  }
  if (cases_path.empty() || model.empty() == template_path.empty()) {
    std::fprintf(stderr, "usage: qwenrt-cli %s\n", kUsage);
    return 2;
  }
  std::string source;
  if (!model.empty()) {
    if (!LoadTemplateFromModel(model, &source)) return 1;
  } else if (!ReadFile(template_path, &source)) {
    std::fprintf(stderr, "render: cannot read %s\n", template_path.c_str());
    return 1;
  }
  auto tmpl = ChatTemplate::Parse(source);
  if (!tmpl.ok()) {
    std::fprintf(stderr, "render: %s\n", tmpl.status().message().c_str());
    return 1;
  }
  std::string cases_text;
  if (!ReadFile(cases_path, &cases_text)) {
    std::fprintf(stderr, "render: cannot read %s\n", cases_path.c_str());
    return 1;
  }
  auto cases = nlohmann::ordered_json::parse(cases_text, nullptr, /*allow_exceptions=*/false);
  if (!cases.is_array()) {
    std::fprintf(stderr, "render: %s: expected a JSON array of cases\n", cases_path.c_str());
    return 1;
  }
  nlohmann::ordered_json result = nlohmann::ordered_json::array();
  for (auto& c : cases) result.push_back(RenderCase(*tmpl, std::move(c)));
  const std::string text = result.dump(1, ' ', /*ensure_ascii=*/false,
                                       nlohmann::ordered_json::error_handler_t::replace) +
                           "\n";
  if (out_path.empty()) {
    std::fwrite(text.data(), 1, text.size(), stdout);
  } else {
    std::ofstream f(out_path, std::ios::binary);
    f << text;
    if (!f) {
      std::fprintf(stderr, "render: cannot write %s\n", out_path.c_str());
      return 1;
    }
  }
  return 0;
}

const bool kRegistered = RegisterCommand("render", Command{kUsage, Run});

}  // namespace
}  // namespace qwenrt::cli

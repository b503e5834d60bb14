// qwenrt-bench constrained: the decode rate of a chat turn with a constraint next to the same turn
// without one, on one session (the constraint's target: >= 90% of the unconstrained rate). Each
// repetition runs the free turn, then the constrained turn (a JSON Schema, or tool_choice
// required), from the same prompt; the table shows the decode tokens/s of both and their ratio,
// plus the tokens the constraint forced. Not a timed test: compare the ratio within one run.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "chat/chat_model.h"
#include "chat/chat_session.h"
#include "model/model.h"

namespace qwenrt::bench {
namespace {

const char kConstrainedUsage[] =
    "usage: qwenrt-bench constrained -m FILE [-n TOKENS] [-t THREADS] [-r REPS]\n"
    "                                [--schema FILE.json | --tools] [--temp T]\n"
    "  -n default 64, -t default all cores, -r default 3. The constraint: a JSON Schema (default: "
    "an\n"
    "  object with a string, an integer and an array of strings), or --tools (tool_choice "
    "required\n"
    "  with a two-function tool list). --temp: sampling temperature (default 0 = greedy).\n";

constexpr const char* kDefaultSchema = R"({"type": "object", "properties": {
  "name": {"type": "string"}, "age": {"type": "integer", "minimum": 0, "maximum": 150},
  "tags": {"type": "array", "items": {"type": "string"}}}, "required": ["name", "age", "tags"]})";

constexpr const char* kTools = R"([
  {"type": "function", "function": {"name": "search", "parameters": {"type": "object",
   "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}}, "required": ["query"]}}},
  {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
   "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["c", "f"]}},
   "required": ["city"]}}}])";

}  // namespace

int RunConstrained(int argc, char** argv) {
  std::string model_path, schema_path;
  int64_t n = 64;
  int threads = 0, reps = 3;
  float temp = 0;
  bool tools = false;
  for (int i = 2; i < argc; ++i) {
    const std::string k = argv[i];
    const bool has = i + 1 < argc;
    if (k == "-m" && has) {
      model_path = argv[++i];
    } else if (k == "-n" && has) {
      n = std::atoll(argv[++i]);
    } else if (k == "-t" && has) {
      threads = std::atoi(argv[++i]);
    } else if (k == "-r" && has) {
      reps = std::atoi(argv[++i]);
    } else if (k == "--schema" && has) {
      schema_path = argv[++i];
    } else if (k == "--temp" && has) {
      temp = static_cast<float>(std::atof(argv[++i]));
    } else if (k == "--tools") {
      tools = true;
    } else if (k == "-h" || k == "--help") {
      std::fputs(kConstrainedUsage, stdout);
      return 0;
    } else {
      std::fprintf(stderr, "qwenrt-bench constrained: bad option %s\n%s", k.c_str(),
                   kConstrainedUsage);
      return 2;
    }
  }
  if (model_path.empty() || n < 2 || reps < 1) {
    std::fputs(kConstrainedUsage, stderr);
    return 2;
  }
  std::string schema = kDefaultSchema;
  if (!schema_path.empty()) {
    std::ifstream f(schema_path);
    std::stringstream ss;
    ss << f.rdbuf();
    if (!f) {
      std::fprintf(stderr, "qwenrt-bench constrained: cannot read %s\n", schema_path.c_str());
      return 1;
    }
    schema = ss.str();
  }
  auto model = Model::Load(model_path);
  if (!model.ok()) {
    std::fprintf(stderr, "qwenrt-bench constrained: %s\n", model.status().ToString().c_str());
    return 1;
  }
  auto chat_model = ChatModel::Create(*model);
  if (!chat_model.ok()) {
    std::fprintf(stderr, "qwenrt-bench constrained: %s\n", chat_model.status().ToString().c_str());
    return 1;
  }
  const auto t_trie = std::chrono::steady_clock::now();
  if (auto trie = (*chat_model)->token_trie(); !trie.ok()) {  // built once per model, not timed
    std::fprintf(stderr, "qwenrt-bench constrained: %s\n", trie.status().ToString().c_str());
    return 1;
  }
  const double trie_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_trie).count();
  ChatSessionParams sp;
  sp.session.n_threads = threads;
  auto chat = ChatSession::Create(*chat_model, sp);
  if (!chat.ok()) {
    std::fprintf(stderr, "qwenrt-bench constrained: %s\n", chat.status().ToString().c_str());
    return 1;
  }
  ChatRequest req;
  ChatMessage ask;
  ask.content = tools ? "Find the weather in Paris." : "Describe a person as JSON.";
  req.messages = {ask};
  req.enable_thinking = false;
  if (tools) req.tools = *ParseRequestJson(kTools, "tools");
  GenerateRequest free_gen;
  free_gen.max_tokens = n;
  free_gen.sampling.temperature = temp;
  GenerateRequest cons_gen = free_gen;
  if (tools) {
    cons_gen.tool_choice.mode = ToolChoiceMode::kRequired;
  } else {
    auto g = Grammar::FromJsonSchema(schema);
    if (!g.ok()) {
      std::fprintf(stderr, "qwenrt-bench constrained: %s\n", g.status().ToString().c_str());
      return 1;
    }
    cons_gen.constraint = *g;
  }
  std::printf("model %s, %s, %lld tokens, %d reps (token trie %.0f ms, once per model)\n",
              model_path.c_str(), tools ? "tool_choice required" : "JSON Schema",
              static_cast<long long>(n), reps, trie_ms);
  std::printf("%4s %10s %8s %12s %8s %8s %7s\n", "rep", "free t/s", "tokens", "constr. t/s",
              "tokens", "forced", "ratio");
  std::vector<double> ratios;
  for (int r = 0; r <= reps; ++r) {  // r == 0: warm-up
    double rate[2] = {0, 0};
    int64_t tokens[2] = {0, 0}, forced = 0;
    for (int c = 0; c < 2; ++c) {
      Status st = (*chat)->Chat(req, c == 0 ? free_gen : cons_gen);
      if (!st.ok()) {
        std::fprintf(stderr, "qwenrt-bench constrained: %s\n", st.ToString().c_str());
        return 1;
      }
      const TurnReport& rep = (*chat)->report();
      rate[c] = rep.decode_tokens_per_s;
      tokens[c] = rep.generated_tokens;
      if (c == 1) forced = rep.forced_tokens;
    }
    if (r == 0) continue;
    const double ratio = rate[0] > 0 ? rate[1] / rate[0] : 0;
    ratios.push_back(ratio);
    std::printf("%4d %10.2f %8lld %12.2f %8lld %8lld %6.1f%%\n", r, rate[0],
                static_cast<long long>(tokens[0]), rate[1], static_cast<long long>(tokens[1]),
                static_cast<long long>(forced), 100 * ratio);
  }
  std::sort(ratios.begin(), ratios.end());
  std::printf("median ratio %.1f%% (target >= 90%%)\n", 100 * ratios[ratios.size() / 2]);
  return 0;
}

}  // namespace qwenrt::bench

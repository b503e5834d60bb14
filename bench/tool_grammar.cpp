// qwenrt-bench grammar: the MaskBench evaluation of the constraint engine. Per file: compile the
// schema, serialise each test instance as Python's json.dumps does, tokenize it, and walk the
// tokens (mask, check the token is allowed, advance); the end must be accepted too. A file passes
// when it compiles, every valid instance is accepted and every invalid one rejected. Prints one
// JSON line per file (to --json-lines OUT, or stdout) and a summary.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "chat/constraint/grammar.h"
#include "chat/constraint/matcher.h"
#include "chat/constraint/token_trie.h"
#include "qwenrt/gguf.hpp"
#include "text/json.h"
#include "text/tokenizer.h"

namespace qwenrt::bench {
namespace {

const char kGrammarUsage[] =
    "usage: qwenrt-bench grammar --vocab FILE.gguf DIR|FILE... [--json-lines OUT] [--compact] "
    "[--limit N]\n"
    "       [--cpu-time] [--slow-us US]\n"
    "  --cpu-time: mask and compile times in this thread's CPU time (a shared machine's preemption "
    "left out)\n"
    "  --slow-us US: print each mask slower than US with the text before it (stderr)\n"
    "  FILE: a MaskBench file ({\"schema\", \"tests\": [{\"data\", \"valid\"}]}); DIR: every "
    "*.json in it\n";

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i =
      std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5));
  return v[i];
}

bool g_cpu_time = false;  // --cpu-time

// Now in ms: wall time, or this thread's CPU time (--cpu-time).
double NowMs() {
  if (g_cpu_time) {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
  }
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

double Ms(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

}  // namespace

int RunGrammar(int argc, char** argv) {
  std::string vocab, json_lines;
  std::vector<std::string> inputs;
  bool compact = false;
  size_t limit = 0;
  double slow_us = -1;
  for (int i = 2; i < argc; ++i) {
    const std::string k = argv[i];
    if (k == "--vocab" && i + 1 < argc)
      vocab = argv[++i];
    else if (k == "--json-lines" && i + 1 < argc)
      json_lines = argv[++i];
    else if (k == "--limit" && i + 1 < argc)
      limit = std::stoul(argv[++i]);
    else if (k == "--compact")
      compact = true;
    else if (k == "--cpu-time")
      g_cpu_time = true;
    else if (k == "--slow-us" && i + 1 < argc)
      slow_us = std::stod(argv[++i]);
    else if (k == "-h" || k == "--help") {
      std::fputs(kGrammarUsage, stdout);
      return 0;
    } else if (!k.empty() && k[0] == '-') {
      std::fprintf(stderr, "unknown option %s\n%s", k.c_str(), kGrammarUsage);
      return 2;
    } else
      inputs.push_back(k);
  }
  if (vocab.empty() || inputs.empty()) {
    std::fputs(kGrammarUsage, stderr);
    return 2;
  }
  gguf::Error err;
  auto file = gguf::File::Open(vocab, &err, gguf::ParseOptions{false, false});
  if (!file) {
    std::fprintf(stderr, "qwenrt-bench grammar: %s\n", err.ToString().c_str());
    return 1;
  }
  TokenizerOptions topt;
  topt.nfc = false;  // keep the serialised bytes exactly
  auto tok = Tokenizer::FromGguf(*file, topt);
  if (!tok.ok()) {
    std::fprintf(stderr, "qwenrt-bench grammar: %s\n", tok.status().message().c_str());
    return 1;
  }
  const auto t_trie0 = std::chrono::steady_clock::now();
  auto trie = TokenTrie::Build(**tok);
  if (!trie.ok()) {
    std::fprintf(stderr, "qwenrt-bench grammar: %s\n", trie.status().message().c_str());
    return 1;
  }
  const double trie_ms = Ms(t_trie0, std::chrono::steady_clock::now());

  std::vector<std::string> files;
  for (const auto& in : inputs) {
    std::error_code ec;
    if (std::filesystem::is_directory(in, ec)) {
      for (const auto& e : std::filesystem::directory_iterator(in, ec)) {
        if (e.path().extension() == ".json") files.push_back(e.path().string());
      }
    } else {
      files.push_back(in);
    }
  }
  std::sort(files.begin(), files.end());
  if (limit && files.size() > limit) files.resize(limit);

  FILE* out = stdout;
  if (!json_lines.empty()) {
    out = std::fopen(json_lines.c_str(), "w");
    if (!out) {
      std::fprintf(stderr, "qwenrt-bench grammar: cannot write %s\n", json_lines.c_str());
      return 1;
    }
  }
  int passing = 0, compile_errors = 0, validation_errors = 0, invalidation_errors = 0,
      inconsistent = 0;
  std::vector<double> mask_us_all, compile_ms_all;
  std::vector<uint32_t> bits;
  JsonSchemaOptions sopt;
  sopt.compact = compact;
  for (const auto& path : files) {
    nlohmann::ordered_json line;
    line["file"] = std::filesystem::path(path).filename().string();
    Json doc;  // the library's JSON type: instances are serialised as the engine sees values
    {
      std::ifstream f(path);
      std::stringstream ss;
      ss << f.rdbuf();
      StatusOr<Json> parsed = Json::Parse(ss.str(), Json::Limits{4096});
      if (parsed.ok()) doc = std::move(*parsed);
    }
    if (!doc.is_object() || !doc.contains("schema") || !doc.contains("tests")) {
      line["outcome"] = "compile_error";
      line["error"] = "not a MaskBench file";
      ++compile_errors;
      std::fprintf(out, "%s\n", line.dump().c_str());
      continue;
    }
    const double c0 = NowMs();
    auto grammar = Grammar::FromJsonSchema(doc["schema"].dump(), sopt);
    const double compile_ms = NowMs() - c0;
    line["compile_ms"] = compile_ms;
    compile_ms_all.push_back(compile_ms);
    if (!grammar.ok()) {
      line["outcome"] = "compile_error";
      line["error"] = grammar.status().message();
      ++compile_errors;
      std::fprintf(out, "%s\n", line.dump().c_str());
      continue;
    }
    std::string outcome = "pass";
    std::vector<double> mask_us;
    nlohmann::ordered_json failures = nlohmann::ordered_json::array();
    int test_index = 0;
    Matcher m(*grammar, *trie);  // one per file: later tests reuse the memoised automaton
    for (const Json& t : std::as_const(doc)["tests"]) {
      const bool valid = t["valid"].is_boolean() && t["valid"].get<bool>();
      std::string text;
      t["data"].AppendPython(&text);  // null when absent
      std::vector<int32_t> ids;
      (*tok)->Encode(text, SpecialTokens::kNone, &ids);
      m.Reset();
      bool accepted = true;
      size_t at = 0;
      for (; at < ids.size(); ++at) {
        const int32_t id = ids[at];
        const double m0 = NowMs();
        m.FillMask(&bits);
        const double us = (NowMs() - m0) * 1000;
        mask_us.push_back(us);
        if (slow_us >= 0 && us > slow_us) {
          std::string before;
          for (size_t j = 0; j < at; ++j) before += (*tok)->TokenToPiece(ids[j]);
          if (before.size() > 60) before = "..." + before.substr(before.size() - 60);
          int allowed_n = 0;
          for (uint32_t w : bits) allowed_n += __builtin_popcount(w);
          std::fprintf(stderr, "slow %.0f us  %s test %d token %zu  allowed %d  after: %s\n", us,
                       path.c_str(), test_index, at, allowed_n, before.c_str());
        }
        const bool allowed = (bits[id >> 5] >> (id & 31)) & 1;
        const bool advanced = m.Accept(id);
        if (allowed != advanced) {
          ++inconsistent;
          line["inconsistent"].push_back(
              {{"test", test_index}, {"token", at}, {"id", id}, {"mask", allowed}});
        }
        if (!allowed || !advanced) {
          accepted = false;
          break;
        }
      }
      if (accepted && !m.CanEnd()) accepted = false;
      if (accepted != valid) {
        const std::string kind = valid ? "validation_error" : "invalidation_error";
        if (outcome == "pass" || kind == "invalidation_error") outcome = kind;
        failures.push_back(
            {{"test", test_index}, {"valid", valid}, {"token", at}, {"text", text.substr(0, 300)}});
      }
      ++test_index;
    }
    if (outcome == "pass")
      ++passing;
    else if (outcome == "validation_error")
      ++validation_errors;
    else
      ++invalidation_errors;
    mask_us_all.insert(mask_us_all.end(), mask_us.begin(), mask_us.end());
    line["outcome"] = outcome;
    if (!failures.empty()) line["failures"] = failures;
    nlohmann::ordered_json mt = nlohmann::ordered_json::array();
    for (double us : mask_us) mt.push_back(static_cast<int64_t>(us * 10 + 0.5) / 10.0);
    line["mask_us"] = mt;
    std::fprintf(out, "%s\n", line.dump().c_str());
  }
  if (out != stdout) std::fclose(out);
  const size_t n = files.size();
  std::printf(
      "files %zu  passing %d (%.1f%%)  compile errors %d  validation errors %d  invalidation "
      "errors %d\n",
      n, passing, n ? 100.0 * passing / static_cast<double>(n) : 0.0, compile_errors,
      validation_errors, invalidation_errors);
  std::printf("mask us: p50 %.1f  p90 %.1f  p99 %.1f  max %.1f  (%zu masks)\n",
              Percentile(mask_us_all, 0.5), Percentile(mask_us_all, 0.9),
              Percentile(mask_us_all, 0.99),
              mask_us_all.empty() ? 0.0 : *std::max_element(mask_us_all.begin(), mask_us_all.end()),
              mask_us_all.size());
  std::printf("compile ms: p50 %.2f  p99 %.2f   (token trie %.0f ms, once)\n",
              Percentile(compile_ms_all, 0.5), Percentile(compile_ms_all, 0.99), trie_ms);
  if (inconsistent)
    std::printf("INTERNAL: %d tokens where mask and Accept disagree\n", inconsistent);
  return invalidation_errors == 0 && inconsistent == 0 ? 0 : 1;
}

}  // namespace qwenrt::bench

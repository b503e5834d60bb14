// qwenrt-bench: scripted workloads on a model file. `pp` / `tg` / `speed` (tool_speed.cpp) measure
// prefill and decode like llama-bench, optionally beside it. `multiturn` runs a chat on random
// token ids, re-sending the whole history every turn (as a chat server does), and reports per turn
// how much was reused from the session and the time to first token, plus a full re-prefill of the
// last turn for comparison. Not a timed test: numbers depend on the (shared) machine.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "ops/cpu_dispatch.h"
#include "session/session.h"

namespace qwenrt {
namespace {

const char kUsage[] =
    "usage: qwenrt-bench pp|tg|speed -m FILE [-p N] [-n N] [-d N] [-t T] [-r R] [--peer DIR] "
    "[--json] "
    "(see pp --help)\n"
    "       qwenrt-bench grammar --vocab V.gguf DIR|FILE...  (MaskBench masks; see grammar "
    "--help)\n"
    "       qwenrt-bench constrained -m FILE [-n N] [-t T] [-r R] [--schema S.json | --tools]  "
    "(see --help)\n"
    "       qwenrt-bench parallel -m FILE [--sessions N,...] [--prompt P] [--shared-prefix S] "
    "[--gen G]\n"
    "                             [-t T] [--peer DIR] [--json]  (see parallel --help)\n"
    "       qwenrt-bench soak [-m FILE] [--duration S] [--sessions N] [--seed S] [--check-every "
    "K]\n"
    "                         [-t T] [--json]  (the Engine under random load; see soak --help)\n"
    "       qwenrt-bench roof [-t T]  (read GB/s and int8 GOP/s of this machine)\n"
    "       qwenrt-bench multiturn --model M.gguf [--history N] [--new K] [--turns T] [--reply R]\n"
    "                              [--reasoning-stripped] [--backend cpu|ref|cuda] [--threads N] "
    "[--ubatch U]\n"
    "                              [--chunked] [--seed S] [--json]\n"
    "  --history N           tokens of the first prompt (default 784)\n"
    "  --new K               new user tokens per later turn (default 25)\n"
    "  --turns T             turns (default 3)\n"
    "  --reply R             tokens generated per turn (default 32)\n"
    "  --reasoning-stripped  re-send the history as a template that drops reasoning would: the "
    "last 2\n"
    "                        prompt tokens and the reply are replaced by different tokens (R/2 of "
    "them)\n"
    "  --chunked             CPU: chunked delta rule (split_invariant off): resumed and full "
    "prefills\n"
    "                        then agree within rounding instead of bit for bit\n";

struct Args {
  std::string model;
  int64_t history = 784, new_tokens = 25, turns = 3, reply = 32, ubatch = 512;
  bool stripped = false, json = false, split_invariant = true;
  BackendKind backend = BackendKind::kCpu;
  int threads = 0;
  uint32_t seed = 1;
};

bool ParseInt(const char* s, int64_t lo, int64_t* out) {
  char* end = nullptr;
  long long v = std::strtoll(s, &end, 10);
  if (end == s || *end != '\0' || v < lo) return false;
  *out = v;
  return true;
}

bool ParseArgs(int argc, char** argv, Args* a, std::string* err) {
  for (int i = 2; i < argc; ++i) {
    std::string k = argv[i];
    auto value = [&](const char** v) {
      if (i + 1 >= argc) {
        *err = "missing value for " + k;
        return false;
      }
      *v = argv[++i];
      return true;
    };
    const char* v = nullptr;
    int64_t n = 0;
    if (k == "--reasoning-stripped") {
      a->stripped = true;
    } else if (k == "--json") {
      a->json = true;
    } else if (k == "--chunked") {
      a->split_invariant = false;
    } else if (k == "--model") {
      if (!value(&v)) return false;
      a->model = v;
    } else if (k == "--backend") {
      if (!value(&v)) return false;
      if (std::strcmp(v, "cpu") == 0) {
        a->backend = BackendKind::kCpu;
      } else if (std::strcmp(v, "ref") == 0) {
        a->backend = BackendKind::kRef;
      } else if (std::strcmp(v, "cuda") == 0) {
        a->backend = BackendKind::kCuda;
      } else {
        *err = std::string("unknown backend '") + v + "' (cpu, ref or cuda)";
        return false;
      }
    } else if (k == "--history" || k == "--new" || k == "--turns" || k == "--reply" ||
               k == "--threads" || k == "--ubatch" || k == "--seed") {
      if (!value(&v)) return false;
      int64_t lo = (k == "--history" || k == "--turns" || k == "--ubatch") ? 1 : 0;
      if (!ParseInt(v, lo, &n)) {
        *err = "bad value '" + std::string(v) + "' for " + k;
        return false;
      }
      if (k == "--history") a->history = n;
      if (k == "--new") a->new_tokens = n;
      if (k == "--turns") a->turns = n;
      if (k == "--reply") a->reply = n;
      if (k == "--threads") a->threads = static_cast<int>(n);
      if (k == "--ubatch") a->ubatch = n;
      if (k == "--seed") a->seed = static_cast<uint32_t>(n);
    } else {
      *err = "unknown option " + k;
      return false;
    }
  }
  if (a->model.empty()) {
    *err = "--model is required";
    return false;
  }
  return true;
}

double Ms(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

int32_t Argmax(const float* x, int64_t n) {
  return static_cast<int32_t>(std::max_element(x, x + n) - x);
}

int RunMultiturn(const Args& a) {
  auto loaded = Model::Load(a.model);
  if (!loaded.ok()) {
    std::fprintf(stderr, "qwenrt-bench: %s\n", loaded.status().ToString().c_str());
    return 1;
  }
  std::shared_ptr<const Model> model = *loaded;
  const int64_t V = model->config().n_vocab;
  SessionParams p;
  p.backend = a.backend;
  p.n_threads = a.threads;
  p.ubatch = a.ubatch;
  p.split_invariant = a.split_invariant;
  std::vector<std::string> trace;
  p.trace = [&](const std::string& line) { trace.push_back(line); };
  auto created = Session::Create(model, p);
  if (!created.ok()) {
    std::fprintf(stderr, "qwenrt-bench: %s\n", created.status().ToString().c_str());
    return 1;
  }
  auto s = std::move(created).value();

  std::mt19937 rng(a.seed);
  std::uniform_int_distribution<int32_t> dist(0, static_cast<int32_t>(V - 1));
  auto random_tokens = [&](int64_t n) {
    std::vector<int32_t> v(static_cast<size_t>(n));
    for (auto& t : v) t = dist(rng);
    return v;
  };

  nlohmann::json turns = nlohmann::json::array();
  std::vector<int32_t> prompt = random_tokens(a.history);
  std::vector<float> last_turn_logits;
  double turn1_ttft = 0, turn2_ttft = 0;
  for (int64_t t = 0; t < a.turns; ++t) {
    FeedReport r;
    auto t0 = std::chrono::steady_clock::now();
    Status st = s->Feed(prompt, {}, &r);
    if (!st.ok()) {
      std::fprintf(stderr, "qwenrt-bench: turn %lld: %s\n", static_cast<long long>(t + 1),
                   st.ToString().c_str());
      return 1;
    }
    int32_t first = Argmax(s->last_logits().data(), V);  // what a sampler would do first
    double ttft = Ms(t0);
    (void)first;
    last_turn_logits.assign(s->last_logits().begin(), s->last_logits().end());
    std::vector<int32_t> reply;
    GenerateOptions g;
    g.max_tokens = a.reply;
    g.sampler = Argmax;
    GenerateReport gr;
    if (a.reply > 0 && t + 1 < a.turns) {
      st = s->Generate(g, &reply, &gr);
      if (!st.ok()) {
        std::fprintf(stderr, "qwenrt-bench: generate: %s\n", st.ToString().c_str());
        return 1;
      }
    }
    if (t == 0) turn1_ttft = ttft;
    if (t == 1) turn2_ttft = ttft;
    turns.push_back({{"turn", t + 1},
                     {"prompt_tokens", r.prompt_tokens},
                     {"common_prefix", r.common_prefix},
                     {"reused_tokens", r.reused_tokens},
                     {"checkpoint_pos", r.checkpoint_pos},
                     {"prefilled_tokens", r.prefilled_tokens},
                     {"ttft_ms", ttft},
                     {"prefill_ms", r.prefill_ms},
                     {"decode_tokens", gr.n_decoded},
                     {"decode_ms", gr.decode_ms},
                     {"checkpoint_bytes", r.checkpoint_bytes},
                     {"miss_reason", r.miss_reason}});
    if (t + 1 == a.turns) break;
    // The next request re-sends the whole history plus a new user message.
    std::vector<int32_t> next;
    if (a.stripped) {
      next.assign(prompt.begin(),
                  prompt.end() - std::min<int64_t>(2, static_cast<int64_t>(prompt.size())));
      std::vector<int32_t> answer = random_tokens(std::max<int64_t>(1, a.reply / 2));
      next.insert(next.end(), answer.begin(), answer.end());
    } else {
      next = s->transcript();
    }
    std::vector<int32_t> user = random_tokens(a.new_tokens);
    next.insert(next.end(), user.begin(), user.end());
    prompt = std::move(next);
  }

  // The same last prompt from scratch, as a server without session reuse would do it.
  SessionParams fp = p;
  fp.trace = nullptr;
  auto fresh = Session::Create(model, fp);
  if (!fresh.ok()) return 1;
  auto t0 = std::chrono::steady_clock::now();
  Status st = (*fresh)->Feed(prompt, {}, nullptr);
  double full_ms = Ms(t0);
  if (!st.ok()) {
    std::fprintf(stderr, "qwenrt-bench: full re-prefill: %s\n", st.ToString().c_str());
    return 1;
  }
  auto fl = (*fresh)->last_logits();
  bool identical = fl.size() == last_turn_logits.size() &&
                   std::memcmp(fl.data(), last_turn_logits.data(), fl.size_bytes()) == 0;
  double max_diff = 0, max_abs = 0;
  for (size_t i = 0; i < fl.size(); ++i) {
    max_diff = std::max(max_diff, static_cast<double>(std::fabs(fl[i] - last_turn_logits[i])));
    max_abs = std::max(max_abs, static_cast<double>(std::fabs(fl[i])));
  }

  nlohmann::json out = {
      {"model", a.model},
      {"backend", BackendName(a.backend)},
      {"threads", a.threads},
      {"ubatch", a.ubatch},
      {"split_invariant", a.split_invariant},
      {"history", a.history},
      {"new", a.new_tokens},
      {"reply", a.reply},
      {"reasoning_stripped", a.stripped},
      {"turns", turns},
      {"turn2_over_turn1_ttft", a.turns >= 2 && turn1_ttft > 0 ? turn2_ttft / turn1_ttft : 0.0},
      {"full_reprefill",
       {{"prompt_tokens", prompt.size()},
        {"ms", full_ms},
        {"logits_identical", identical},
        {"max_abs_diff", max_diff},
        {"max_abs_logit", max_abs}}},
  };
  if (a.json) {
    std::printf("%s\n", out.dump(1).c_str());
  } else {
    for (const auto& line : trace) std::printf("%s\n", line.c_str());
    for (const auto& t : turns)
      std::printf("turn %lld: %lld prompt tokens, %lld reused, %lld prefilled, ttft %.1f ms\n",
                  static_cast<long long>(t["turn"]), static_cast<long long>(t["prompt_tokens"]),
                  static_cast<long long>(t["reused_tokens"]),
                  static_cast<long long>(t["prefilled_tokens"]), static_cast<double>(t["ttft_ms"]));
    std::printf("full re-prefill of the last turn: %.1f ms, logits %s (max |diff| %.3g)\n", full_ms,
                identical ? "identical" : "differ", max_diff);
    if (a.turns >= 2) std::printf("turn-2 / turn-1 ttft: %.3f\n", turn2_ttft / turn1_ttft);
  }
  return 0;
}

}  // namespace
}  // namespace qwenrt

namespace qwenrt::bench {
int RunSpeed(int argc, char** argv);  // tool_speed.cpp: pp / tg / speed
int RunGrammar(int argc,
               char** argv);  // tool_grammar.cpp: constrained-decoding masks on MaskBench files
int RunConstrained(int argc, char** argv);  // tool_constrained.cpp: constrained vs free decode rate
int RunParallel(int argc, char** argv);     // tool_parallel.cpp: many sessions through one Engine
int RunRoof(int argc, char** argv);         // tool_roof.cpp: read bandwidth and int8 dot throughput
int RunSoak(int argc, char** argv);         // tool_soak.cpp: the Engine under sustained random load
}  // namespace qwenrt::bench

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    std::fputs(qwenrt::kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (std::strcmp(argv[1], "pp") == 0 || std::strcmp(argv[1], "tg") == 0 ||
      std::strcmp(argv[1], "speed") == 0) {
    return qwenrt::bench::RunSpeed(argc, argv);
  }
  if (std::strcmp(argv[1], "grammar") == 0) return qwenrt::bench::RunGrammar(argc, argv);
  if (std::strcmp(argv[1], "constrained") == 0) return qwenrt::bench::RunConstrained(argc, argv);
  if (std::strcmp(argv[1], "parallel") == 0) return qwenrt::bench::RunParallel(argc, argv);
  if (std::strcmp(argv[1], "soak") == 0) return qwenrt::bench::RunSoak(argc, argv);
  if (std::strcmp(argv[1], "roof") == 0) {
    // tool_roof.cpp is compiled for the highest CPU kernel level (bench/CMakeLists.txt).
    const auto& top = qwenrt::cpu_dispatch::Levels().back();
    if (!top.runnable) {
      std::fprintf(
          stderr,
          "qwenrt-bench roof: the probes are built for the %s level, which this CPU cannot run\n",
          top.name);
      return 1;
    }
    return qwenrt::bench::RunRoof(argc, argv);
  }
  if (std::strcmp(argv[1], "multiturn") != 0) {
    std::fprintf(stderr, "qwenrt-bench: unknown workload '%s'\n%s", argv[1], qwenrt::kUsage);
    return 2;
  }
  qwenrt::Args a;
  std::string err;
  if (!qwenrt::ParseArgs(argc, argv, &a, &err)) {
    std::fprintf(stderr, "qwenrt-bench: %s\n%s", err.c_str(), qwenrt::kUsage);
    return 2;
  }
  return qwenrt::RunMultiturn(a);
}

// qwenrt-bench parallel: many sessions on one model at once through the batching Engine
// (src/chat/engine.h), optionally next to llama.cpp's llama-batched-bench on the same file in the
// same run (--peer DIR).
//   For each N of --sessions: N sessions each get a prompt of P tokens (the first S shared by all,
//   the rest their own, random ids) and generate G tokens (greedy, end of generation banned), all
//   submitted at once. Reported: aggregate decode tokens/s (N * (G-1) tokens over the window from
//   the last session's first token to the last session's end: the steps where all N decode),
//   per-session decode tokens/s (mean of each session's own), time to first token p50/p99 (from
//   submission, queueing and the batched prefill included), prefill tokens/s of the whole batch,
//   the tokens prefilled in all, and the memory held (KV caches, recurrent states, checkpoints of
//   the N sessions + the engine's scratch; a page or snapshot shared by several sessions counted
//   once). With --shared-prefix S > 0 the S shared tokens are prefilled once, into a root session
//   that the N sessions are forked from (ChatSession::Fork: KV pages shared copy-on-write, the
//   recurrent state copied): each session then prefills only its own P - S tokens. That prefill of
//   the prefix is reported on its own line; it is not in the TTFTs (a host prefills its system
//   prompt once), and the joining session of the TTFT line below and the sessions it joins are
//   forked from it too. Then the time to first token of one session joining an engine busy with
//   max(N)-1 decoding sessions, against the same session on an idle engine.
// Not a timed test: compare ratios measured in one run on the same (shared) machine.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "chat/engine.h"

namespace qwenrt::bench {
namespace {

const char kParallelUsage[] =
    "usage: qwenrt-bench parallel -m FILE [--sessions N[,N...]] [--prompt P] [--shared-prefix S]\n"
    "                             [--gen G] [-t THREADS] [--step-tokens B] [--peer DIR] [--json]\n"
    "  defaults: --sessions 1,2,4,8,16 --prompt 128 --shared-prefix 0 --gen 64 -t all cores\n"
    "  --step-tokens B  the engine's per-step token budget (default 512)\n"
    "  --no-pack   load without the packed weight copies (as qwenrt-bench pp/tg: packed by "
    "default)\n"
    "  --peer DIR  also run DIR/bin/llama-batched-bench -npp P -ntg G -npl N,... on the same "
    "file\n";

struct ParallelArgs {
  std::string model, peer;
  std::vector<int64_t> sessions = {1, 2, 4, 8, 16};
  int64_t prompt = 128, shared = 0, gen = 64, step_tokens = 512;
  int threads = 0;
  bool json = false, pack = true;  // pack: ModelLoadOptions::pack_weights, as qwenrt-bench pp/tg
};

bool ParseInt(const std::string& s, int64_t lo, int64_t hi, int64_t* out) {
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || v < lo || v > hi) return false;
  *out = v;
  return true;
}

bool ParseArgs(int argc, char** argv, ParallelArgs* a, std::string* err) {
  for (int i = 2; i < argc; ++i) {
    const std::string k = argv[i];
    std::string v;
    auto value = [&]() {
      if (i + 1 >= argc) {
        *err = "missing value for " + k;
        return false;
      }
      v = argv[++i];
      return true;
    };
    int64_t n = 0;
    if (k == "--help" || k == "-h") {
      *err = "help";
      return false;
    } else if (k == "--json") {
      a->json = true;
    } else if (k == "--no-pack") {
      a->pack = false;
    } else if (k == "-m" || k == "--model") {
      if (!value()) return false;
      a->model = v;
    } else if (k == "--peer") {
      if (!value()) return false;
      a->peer = v;
    } else if (k == "--sessions") {
      if (!value()) return false;
      a->sessions.clear();
      std::stringstream in(v);
      std::string item;
      while (std::getline(in, item, ',')) {
        if (!ParseInt(item, 1, 256, &n)) {
          *err = "bad --sessions '" + v + "'";
          return false;
        }
        a->sessions.push_back(n);
      }
    } else if (k == "--prompt" || k == "--shared-prefix" || k == "--gen" || k == "--step-tokens" ||
               k == "-t") {
      if (!value()) return false;
      if (!ParseInt(v, k == "--shared-prefix" || k == "-t" ? 0 : 1, 1 << 20, &n)) {
        *err = "bad value '" + v + "' for " + k;
        return false;
      }
      if (k == "--prompt") a->prompt = n;
      if (k == "--shared-prefix") a->shared = n;
      if (k == "--gen") a->gen = n;
      if (k == "--step-tokens") a->step_tokens = n;
      if (k == "-t") a->threads = static_cast<int>(n);
    } else {
      *err = "unknown option " + k;
      return false;
    }
  }
  if (a->model.empty()) *err = "-m FILE is required";
  if (err->empty() && a->shared > a->prompt) *err = "--shared-prefix is larger than --prompt";
  if (err->empty() && a->sessions.empty()) *err = "--sessions is empty";
  return err->empty();
}

struct Row {
  int64_t n = 0;
  double aggregate_tg = 0, per_session_tg = 0, prefill = 0, ttft_p50 = 0, ttft_p99 = 0;
  double memory_mib = 0, one_session_mib = 0;  // one_session: the first session's own state
  double engine_mib = 0;                       // the engine's scratch (in memory_mib)
  double adds_mib = 0;    // mean per session: its own KV pages, recurrent state and checkpoints
  int64_t prefilled = 0;  // tokens run through the model, the shared prefix included
  double prefix_ms = 0;   // prefilling the shared prefix once (0: no shared prefix)
  double peer_tg = 0, peer_pp = 0;  // 0: not measured
};

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size()))) - 1;
  return v[std::min(i, v.size() - 1)];
}

GenerateRequest Greedy(const ChatModel& cm, int64_t gen) {
  GenerateRequest g;
  g.max_tokens = gen;
  g.sampling.temperature = 0;
  for (int32_t e : cm.tokenizer().eog_ids()) g.sampling.logit_bias.push_back({e, -1e9f});
  return g;
}

ChatSessionParams SessionParamsFor(const ParallelArgs& a) {
  ChatSessionParams p;
  p.session.backend = BackendKind::kCpu;
  p.session.n_threads = a.threads;
  p.session.checkpoint_tail = 0;  // llama-batched-bench takes no snapshots either
  p.session.initial_capacity = a.prompt + a.gen + 1;
  return p;
}

std::vector<int32_t> Prompt(const ParallelArgs& a, int64_t n_vocab, uint32_t who) {
  std::mt19937 shared_rng(12345), own_rng(1000 + who);
  std::uniform_int_distribution<int32_t> d(0, static_cast<int32_t>(n_vocab - 1));
  std::vector<int32_t> t;
  for (int64_t i = 0; i < a.prompt; ++i) t.push_back(i < a.shared ? d(shared_rng) : d(own_rng));
  return t;
}

// The root holding the shared prefix (prefilled once), or null without one; *ms: its prefill time.
StatusOr<std::unique_ptr<ChatSession>> PrefixRoot(const ParallelArgs& a,
                                                  const std::shared_ptr<const ChatModel>& cm,
                                                  const std::vector<int32_t>& prompt, double* ms) {
  if (a.shared == 0) return std::unique_ptr<ChatSession>();
  QWENRT_ASSIGN_OR_RETURN(auto root, ChatSession::Create(cm, SessionParamsFor(a)));
  const auto t0 = std::chrono::steady_clock::now();
  QWENRT_RETURN_IF_ERROR(root->FeedTokens(std::span(prompt).first(static_cast<size_t>(a.shared))));
  *ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return root;
}

// A new session: forked from the root (sharing its prefix) when there is one.
StatusOr<std::unique_ptr<ChatSession>> NewSession(const ParallelArgs& a,
                                                  const std::shared_ptr<const ChatModel>& cm,
                                                  const std::unique_ptr<ChatSession>& root) {
  if (root) return root->Fork();
  return ChatSession::Create(cm, SessionParamsFor(a));
}

StatusOr<Row> RunN(const ParallelArgs& a, const std::shared_ptr<const ChatModel>& cm, int64_t n) {
  EngineParams ep;
  ep.n_threads = a.threads;
  ep.step_tokens = a.step_tokens;
  ep.max_sessions = n;
  QWENRT_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, Engine::Create(cm, ep));
  const int64_t V = cm->tokenizer().n_vocab();
  std::vector<std::unique_ptr<ChatSession>> chats;
  std::vector<std::vector<int32_t>> prompts;
  for (int64_t i = 0; i < n; ++i) prompts.push_back(Prompt(a, V, static_cast<uint32_t>(i)));
  Row r;
  r.n = n;
  // The shared prefix, prefilled once into the root every session is forked from.
  QWENRT_ASSIGN_OR_RETURN(std::unique_ptr<ChatSession> root,
                          PrefixRoot(a, cm, prompts[0], &r.prefix_ms));
  if (root) r.prefilled += root->report().feed.prefilled_tokens;
  for (int64_t i = 0; i < n; ++i) {
    QWENRT_ASSIGN_OR_RETURN(auto c, NewSession(a, cm, root));
    chats.push_back(std::move(c));
  }
  const GenerateRequest gen = Greedy(*cm, a.gen);
  std::vector<std::shared_ptr<EngineTurn>> turns;
  for (int64_t i = 0; i < n; ++i) {
    QWENRT_ASSIGN_OR_RETURN(auto t, engine->SubmitTokens(*chats[static_cast<size_t>(i)],
                                                         prompts[static_cast<size_t>(i)], gen));
    turns.push_back(std::move(t));
  }
  for (const auto& t : turns) QWENRT_RETURN_IF_ERROR(t->Wait());
  std::vector<double> ttft, firsts;
  // What the sessions (and the root) hold together: each shared page and snapshot counted once.
  auto held_by = [](const ChatSession& c) {
    const Session& s = c.session();
    return s.kv_prorated_bytes() + s.checkpoint_prorated_bytes() + s.state_bytes();
  };
  size_t held = engine->bytes() + (root ? held_by(*root) : 0);
  r.engine_mib = static_cast<double>(engine->bytes()) / (1024.0 * 1024.0);
  for (const auto& c : chats) {
    const TurnReport& rep = c->report();
    ttft.push_back(rep.ttft_ms);
    firsts.push_back(rep.ttft_ms / 1000.0);
    r.per_session_tg += rep.decode_tokens_per_s / static_cast<double>(n);
    r.prefilled += rep.feed.prefilled_tokens;
    held += held_by(*c);
    const Session& s = c->session();
    r.adds_mib +=
        static_cast<double>(s.kv_unique_bytes() + s.checkpoint_unique_bytes() + s.state_bytes()) /
        (1024.0 * 1024.0 * static_cast<double>(n));
  }
  {
    const Session& s = chats[0]->session();
    r.one_session_mib = static_cast<double>(s.kv_bytes() + s.checkpoint_bytes() + s.state_bytes()) /
                        (1024.0 * 1024.0);
  }
  // Each turn's end, from its own report (its feed started at submission, t0).
  double last_end = 0;
  for (size_t i = 0; i < chats.size(); ++i) {
    const TurnReport& rep = chats[i]->report();
    last_end = std::max(last_end, (rep.ttft_ms + rep.decode_ms) / 1000.0);
  }
  const double last_first = *std::max_element(firsts.begin(), firsts.end());
  r.aggregate_tg =
      last_end > last_first ? static_cast<double>(n * (a.gen - 1)) / (last_end - last_first) : 0;
  r.prefill = last_first > 0 ? static_cast<double>(n * (a.prompt - a.shared)) / last_first : 0;
  r.ttft_p50 = Percentile(ttft, 0.5);
  r.ttft_p99 = Percentile(ttft, 0.99);
  r.memory_mib = static_cast<double>(held) / (1024.0 * 1024.0);
  return r;
}

// TTFT (ms) of one new session on an idle engine, and joining one busy with `busy` decoding
// sessions.
StatusOr<std::pair<double, double>> JoinTtft(const ParallelArgs& a,
                                             const std::shared_ptr<const ChatModel>& cm,
                                             int64_t busy) {
  EngineParams ep;
  ep.n_threads = a.threads;
  ep.step_tokens = a.step_tokens;
  ep.max_sessions = busy + 1;
  QWENRT_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, Engine::Create(cm, ep));
  const int64_t V = cm->tokenizer().n_vocab();
  const std::vector<int32_t> prompt = Prompt(a, V, 999);
  const GenerateRequest one = Greedy(*cm, 1);
  double idle = 0, joined = 0, prefix_ms = 0;
  QWENRT_ASSIGN_OR_RETURN(std::unique_ptr<ChatSession> root, PrefixRoot(a, cm, prompt, &prefix_ms));
  {
    QWENRT_ASSIGN_OR_RETURN(auto c, NewSession(a, cm, root));
    QWENRT_ASSIGN_OR_RETURN(auto t, engine->SubmitTokens(*c, prompt, one));
    QWENRT_RETURN_IF_ERROR(t->Wait());
    idle = c->report().ttft_ms;
  }
  std::vector<std::unique_ptr<ChatSession>> chats;
  std::vector<std::shared_ptr<EngineTurn>> turns;
  std::vector<std::vector<int32_t>> prompts;
  for (int64_t i = 0; i < busy; ++i) prompts.push_back(Prompt(a, V, static_cast<uint32_t>(i)));
  std::atomic<int64_t> decoding{0};  // sessions that streamed their first piece
  GenerateRequest forever = Greedy(*cm, 1 << 20);
  forever.on_piece = [&decoding, seen = false](PieceKind, std::string_view) mutable {
    if (!seen) ++decoding;
    seen = true;
    return true;
  };
  for (int64_t i = 0; i < busy; ++i) {
    QWENRT_ASSIGN_OR_RETURN(auto c, NewSession(a, cm, root));
    QWENRT_ASSIGN_OR_RETURN(auto t,
                            engine->SubmitTokens(*c, prompts[static_cast<size_t>(i)], forever));
    chats.push_back(std::move(c));
    turns.push_back(std::move(t));
  }
  // Wait until all of them decode (a reply may hold its first text back a little: at most 60 s).
  for (int k = 0; k < 12000 && decoding.load() < busy; ++k) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  {
    QWENRT_ASSIGN_OR_RETURN(auto c, NewSession(a, cm, root));
    QWENRT_ASSIGN_OR_RETURN(auto t, engine->SubmitTokens(*c, prompt, one));
    QWENRT_RETURN_IF_ERROR(t->Wait());
    joined = c->report().ttft_ms;
  }
  for (const auto& t : turns) engine->Cancel(*t);
  for (const auto& t : turns) (void)t->Wait();
  return std::make_pair(idle, joined);
}

bool RunPeer(const ParallelArgs& a, std::vector<Row>* rows, std::string* err) {
  std::string npl;
  int64_t most = 1;
  for (const Row& r : *rows) {
    if (!npl.empty()) npl += ',';
    npl += std::to_string(r.n);
    most = std::max(most, r.n);
  }
  const int threads =
      a.threads > 0 ? a.threads : static_cast<int>(std::thread::hardware_concurrency());
  const int64_t ctx = most * (a.prompt + a.gen) + 16;
  const std::string cmd = "'" + a.peer + "/bin/llama-batched-bench' -m '" + a.model + "' -c " +
                          std::to_string(ctx) + " -b 2048 -ub 512 -npp " +
                          std::to_string(a.prompt) + " -ntg " + std::to_string(a.gen) + " -npl " +
                          npl + " -t " + std::to_string(threads) + (a.shared > 0 ? " -pps" : "") +
                          " --output-format jsonl 2>/dev/null";
  std::FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) {
    *err = "cannot run " + cmd;
    return false;
  }
  std::string out;
  char buf[4096];
  while (size_t k = std::fread(buf, 1, sizeof buf, p)) out.append(buf, k);
  const int rc = pclose(p);
  if (rc != 0) {
    *err = "llama-batched-bench failed (exit " + std::to_string(rc) + "): " + cmd;
    return false;
  }
  std::stringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("pl")) continue;
    for (Row& r : *rows) {
      if (j.value("pl", 0) == r.n) {
        r.peer_tg = j.value("speed_tg", 0.0);
        r.peer_pp = j.value("speed_pp", 0.0);
      }
    }
  }
  return true;
}

}  // namespace

int RunParallel(int argc, char** argv) {
  ParallelArgs a;
  std::string err;
  if (!ParseArgs(argc, argv, &a, &err)) {
    if (err == "help") {
      std::fputs(kParallelUsage, stdout);
      return 0;
    }
    std::fprintf(stderr, "qwenrt-bench: %s\n%s", err.c_str(), kParallelUsage);
    return 2;
  }
  auto fail = [](const Status& st) {
    std::fprintf(stderr, "qwenrt-bench: %s\n", st.ToString().c_str());
    return 1;
  };
  ModelLoadOptions load;
  load.pack_weights = a.pack;
  auto loaded = Model::Load(a.model, load);
  if (!loaded.ok()) return fail(loaded.status());
  auto cm = ChatModel::Create(*loaded);
  if (!cm.ok()) return fail(cm.status());
  std::vector<Row> rows;
  for (int64_t n : a.sessions) {
    auto r = RunN(a, *cm, n);
    if (!r.ok()) return fail(r.status());
    rows.push_back(*r);
    std::fprintf(stderr, "qwenrt-bench parallel: N=%lld done\n", static_cast<long long>(n));
  }
  const int64_t most = *std::max_element(a.sessions.begin(), a.sessions.end());
  auto join = JoinTtft(a, *cm, std::max<int64_t>(most - 1, 1));
  if (!join.ok()) return fail(join.status());
  // A failed peer run leaves '-' in its columns and exit status 1, but our figures still print.
  bool peer_failed = false;
  if (!a.peer.empty() && !RunPeer(a, &rows, &err)) {
    std::fprintf(stderr, "qwenrt-bench: %s\n", err.c_str());
    peer_failed = true;
  }
  const int threads =
      a.threads > 0 ? a.threads : static_cast<int>(std::thread::hardware_concurrency());
  const double single = rows.front().n == 1 ? rows.front().aggregate_tg : 0;
  if (a.json) {
    nlohmann::ordered_json out = {{"model", a.model},
                                  {"threads", threads},
                                  {"packed_weights", (*loaded)->packed_bytes() > 0},
                                  {"prompt", a.prompt},
                                  {"shared_prefix", a.shared},
                                  {"gen", a.gen},
                                  {"step_tokens", a.step_tokens},
                                  {"ttft_idle_ms", join->first},
                                  {"ttft_join_busy_ms", join->second},
                                  {"rows", nlohmann::ordered_json::array()}};
    for (const Row& r : rows) {
      nlohmann::ordered_json e = {{"sessions", r.n},
                                  {"aggregate_tg", r.aggregate_tg},
                                  {"per_session_tg", r.per_session_tg},
                                  {"prefill", r.prefill},
                                  {"ttft_p50_ms", r.ttft_p50},
                                  {"ttft_p99_ms", r.ttft_p99},
                                  {"memory_mib", r.memory_mib},
                                  {"one_session_mib", r.one_session_mib},
                                  {"prefilled_tokens", r.prefilled},
                                  {"shared_prefix_prefill_ms", r.prefix_ms},
                                  {"engine_scratch_mib", r.engine_mib},
                                  {"adds_per_session_mib", r.adds_mib}};
      if (r.peer_tg > 0) {
        e["peer_aggregate_tg"] = r.peer_tg;
        e["peer_prefill"] = r.peer_pp;
        e["ratio_tg"] = r.aggregate_tg / r.peer_tg;
      }
      out["rows"].push_back(std::move(e));
    }
    std::printf("%s\n", out.dump(2).c_str());
    return peer_failed ? 1 : 0;
  }
  std::printf("model %s (%s), %d threads, prompt %lld (shared %lld), gen %lld, step budget %lld\n",
              a.model.c_str(),
              (*loaded)->packed_bytes() > 0 ? "packed weights" : "file-layout weights", threads,
              static_cast<long long>(a.prompt), static_cast<long long>(a.shared),
              static_cast<long long>(a.gen), static_cast<long long>(a.step_tokens));
  std::printf(
      "| N | aggregate tg t/s | vs N=1 | per-session tg t/s | prefill t/s | TTFT p50 ms | TTFT p99 "
      "ms | "
      "prefilled | memory MiB | one session MiB |%s\n",
      a.peer.empty() ? "" : " peer tg t/s | ratio | peer pp t/s |");
  std::printf("|---|---|---|---|---|---|---|---|---|---|%s\n",
              a.peer.empty() ? "" : "---|---|---|");
  for (const Row& r : rows) {
    std::printf("| %lld | %.2f | %.2fx | %.2f | %.1f | %.0f | %.0f | %lld | %.1f | %.1f |",
                static_cast<long long>(r.n), r.aggregate_tg,
                single > 0 ? r.aggregate_tg / single : 0.0, r.per_session_tg, r.prefill, r.ttft_p50,
                r.ttft_p99, static_cast<long long>(r.prefilled), r.memory_mib, r.one_session_mib);
    if (!a.peer.empty()) {
      if (r.peer_tg > 0) {
        std::printf(" %.2f | %.2fx | %.1f |", r.peer_tg, r.aggregate_tg / r.peer_tg, r.peer_pp);
      } else {
        std::printf(" - | - | - |");
      }
    }
    std::printf("\n");
  }
  if (a.shared > 0) {
    for (const Row& r : rows) {
      std::printf(
          "N=%lld: the shared prefix of %lld tokens prefilled once in %.0f ms; memory %.1f MiB = "
          "engine scratch "
          "%.1f + the rest; one session alone %.1f MiB, each session adds %.1f MiB: 2 x one + N x "
          "adds = %.1f MiB\n",
          static_cast<long long>(r.n), static_cast<long long>(a.shared), r.prefix_ms, r.memory_mib,
          r.engine_mib, r.one_session_mib, r.adds_mib,
          2 * r.one_session_mib + static_cast<double>(r.n) * r.adds_mib);
    }
  }
  std::printf(
      "TTFT of a session joining an engine with %lld decoding sessions: %.0f ms (idle engine: %.0f "
      "ms, %.2fx)\n",
      static_cast<long long>(std::max<int64_t>(most - 1, 1)), join->second, join->first,
      join->first > 0 ? join->second / join->first : 0.0);
  return peer_failed ? 1 : 0;
}

}  // namespace qwenrt::bench

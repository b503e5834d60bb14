// qwenrt-bench pp / tg / speed: prefill and decode speed on any model file, in llama-bench's terms,
// optionally next to llama.cpp's own llama-bench on the same file in the same run (--peer DIR).
//   ppN: prefill N random tokens into an empty session (one Feed), tokens/s;
//   tgN: decode N tokens one at a time from an empty session, tokens/s;
//   "ppN @ dD" / "tgN @ dD" (-d D): the same after D random tokens of context (llama-bench's
//   -d): the session is brought back to exactly those D tokens before every run, untimed.
//   --mtp K (tg): also greedy Generate with speculative decoding, up to K drafts per verify pass,
//   next to plain greedy Generate of the same N tokens. A file with an MTP head: the speculative
//   runs use a second session kept in step with the head (SessionParams::mtp; the plain runs do not
//   pay for the head's upkeep) and draft with the head (MtpDraftSource). --oracle-acceptance A then
//   still runs the head in full for every draft call but replaces its tokens by an oracle's
//   (testing/draft_sources.h: it knows the greedy continuation, computed by the plain run, and gets
//   each draft right with probability A), so the head's real cost is measured at a chosen
//   acceptance; without it the head's own drafts are checked (real acceptance). A file without a
//   head: the oracle alone (A default 0.8), which drafts at no cost, so only the verify machinery
//   is measured; the report says which ("draft cost: ..."). Also the cost of one verify pass of
//   1+k tokens (k = 1..K) against one decode step.
// Each test: one warm-up run, then -r timed repetitions; the table shows mean ± sd. Not a timed
// test: numbers depend on the (shared) machine, so compare ratios measured in one run.
//
// Depth: one session for every test. Each run first feeds the D context tokens again; the first
// time that prefills them (with a checkpoint at D-1), every later time it only restores that
// checkpoint and re-runs position D-1 (Feed's "ends inside the transcript" case), since the KV is
// cut back and keeps its pages. Not Session::Fork per run: a fork holds only the pages of its valid
// positions and makes its ThreadPool and ForwardContext on first use, so the timed run would pay
// for KV pages and scratch that a long-lived session (and llama-bench's context) already has.
// initial_capacity covers the deepest context plus the longest test, so no KV growth is timed.
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "chat/chat_model.h"
#include "peer_server.h"
#include "session/draft_policy.h"
#include "session/mtp_draft.h"
#include "session/session.h"
#include "session/speculative.h"
#include "testing/draft_sources.h"

namespace qwenrt::bench {
namespace {

// "VmRSS N MiB, VmHWM N MiB" from /proc/self/status ("" where it cannot be read).
std::string ProcMemory() {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return "";
  std::string out;
  char line[256];
  while (std::fgets(line, sizeof line, f) != nullptr) {
    long kb = 0;
    char key[32];
    if (std::sscanf(line, "%31[^:]: %ld kB", key, &kb) == 2 &&
        (std::strcmp(key, "VmRSS") == 0 || std::strcmp(key, "VmHWM") == 0)) {
      out += (out.empty() ? "" : ", ") + std::string(key) + " " +
             std::to_string(static_cast<long>(kb / 1024)) + " MiB";
    }
  }
  std::fclose(f);
  return out;
}

const char kSpeedUsage[] =
    "usage: qwenrt-bench pp|tg|speed -m FILE [-p N[,N...]] [-n N[,N...]] [-d N[,N...]]\n"
    "         [-t THREADS] [-r REPS] [--backend cpu|ref|cuda] [--chunked] [--cuda-graphs]\n"
    "         [--peer DIR] [--json]\n"
    "  pp: prefill tests only (default -p 512); tg: decode tests only (default -n 128);\n"
    "  speed: both (defaults -p 512 -n 128). -t default: all cores; -r default 3.\n"
    "  -d N[,N...] each test also after N tokens of context (llama-bench's depth; its prefill is\n"
    "              not timed; names like \"tg128 @ d4096\"); default 0\n"
    "  --peer DIR  also run DIR/bin/llama-bench (llama.cpp) on the same file with the same tests\n"
    "  --chunked   CPU: chunked delta rule (not split-invariant)\n"
    "  --no-pack   load without the packed weight copies (ModelLoadOptions::pack_weights = false)\n"
    "  --cuda-graphs  CUDA: replay decode steps as captured graphs (SessionParams::cuda_graphs)\n"
    "  --kv-type f32|f16|q8_0  KV cache storage (SessionParams::kv_type; default: the backend's)\n"
    "  --mtp K     tg: also speculative greedy decoding with up to K drafts per verify pass\n"
    "              (K <= 14), and the cost of a verify pass of 1+k tokens vs a decode step\n"
    "  --oracle-acceptance A  --mtp's drafts: an oracle right with probability A; with an MTP\n"
    "              head in the file the head still runs in full and only its tokens are replaced;\n"
    "              without a head the oracle drafts at no cost (default there: 0.8). Without this\n"
    "              option a file's MTP head drafts on its own (real acceptance)\n"
    "  --adaptive  --mtp's speculative runs choose 0..K drafts per pass (DraftLengthPolicy, the\n"
    "              chat layer's default; one policy per test, learning from the warm-up run on)\n"
    "  --chat TEXT --mtp's runs (and the peer's) start after TEXT as one user message through the\n"
    "              model's chat template (default: one random token)\n"
    "  --peer DIR with --mtp: also the peer's MTP decoding (DIR/bin/llama-server --spec-type\n"
    "              draft-mtp --spec-draft-n-max K, over loopback) and its plain decoding through\n"
    "              the same server build, on the same context, greedy, the same number of tokens\n";

struct SpeedArgs {
  std::string model, peer;
  std::vector<int64_t> pp, tg;
  std::vector<int64_t> depth = {0};  // context tokens before each test (llama-bench's -d)
  int threads = 0, reps = 3;
  BackendKind backend = BackendKind::kCpu;
  bool json = false, split_invariant = true, cuda_graphs = false, pack = true;
  std::optional<KvType> kv_type;
  int64_t mtp = 0;  // --mtp: most drafts per verify pass; 0 = no speculative runs
  std::optional<double> oracle_acceptance;  // --oracle-acceptance; unset: the head's own drafts
  std::string chat;       // --chat: the speculative runs start after this user message, rendered
  bool adaptive = false;  // --adaptive: the draft length per pass from a DraftLengthPolicy
};

// Zeros are dropped (no test of 0 tokens) unless keep_zero (depth 0: no context).
bool ParseList(const char* s, std::vector<int64_t>* out, bool keep_zero = false) {
  out->clear();
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    char* end = nullptr;
    const long long v = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v < 0 || v > (1 << 24)) return false;
    if (v > 0 || keep_zero) out->push_back(v);
  }
  return true;
}

bool ParseSpeedArgs(int argc, char** argv, SpeedArgs* a, std::string* err) {
  const std::string mode = argv[1];
  if (mode != "tg") a->pp = {512};
  if (mode != "pp") a->tg = {128};
  for (int i = 2; i < argc; ++i) {
    const std::string k = argv[i];
    const char* v = nullptr;
    auto value = [&]() {
      if (i + 1 >= argc) {
        *err = "missing value for " + k;
        return false;
      }
      v = argv[++i];
      return true;
    };
    if (k == "--help" || k == "-h") {
      *err = "help";
      return false;
    } else if (k == "--json") {
      a->json = true;
    } else if (k == "--chunked") {
      a->split_invariant = false;
    } else if (k == "--cuda-graphs") {
      a->cuda_graphs = true;
    } else if (k == "--no-pack") {
      a->pack = false;
    } else if (k == "-m" || k == "--model") {
      if (!value()) return false;
      a->model = v;
    } else if (k == "--peer") {
      if (!value()) return false;
      a->peer = v;
    } else if (k == "-p" || k == "-n") {
      if (!value()) return false;
      if (!ParseList(v, k == "-p" ? &a->pp : &a->tg)) {
        *err = "bad list '" + std::string(v) + "' for " + k;
        return false;
      }
    } else if (k == "-d" || k == "--n-depth") {
      if (!value()) return false;
      if (!ParseList(v, &a->depth, true) || a->depth.empty()) {
        *err = "bad list '" + std::string(v) + "' for " + k;
        return false;
      }
    } else if (k == "-t" || k == "-r") {
      if (!value()) return false;
      char* end = nullptr;
      const long v2 = std::strtol(v, &end, 10);
      if (*end != '\0' || v2 < (k == "-t" ? 0 : 1) || v2 > 1024) {
        *err = "bad value '" + std::string(v) + "' for " + k;
        return false;
      }
      (k == "-t" ? a->threads : a->reps) = static_cast<int>(v2);
    } else if (k == "--mtp") {
      if (!value()) return false;
      char* end = nullptr;
      const long v2 = std::strtol(v, &end, 10);
      if (*end != '\0' || v2 < 1 || v2 > kMaxVerifyDraft) {
        *err = "bad value '" + std::string(v) + "' for --mtp (1.." +
               std::to_string(kMaxVerifyDraft) + ")";
        return false;
      }
      a->mtp = v2;
    } else if (k == "--adaptive") {
      a->adaptive = true;
    } else if (k == "--chat") {
      if (!value()) return false;
      a->chat = v;
    } else if (k == "--oracle-acceptance") {
      if (!value()) return false;
      char* end = nullptr;
      const double v2 = std::strtod(v, &end);
      if (*end != '\0' || !(v2 >= 0.0 && v2 <= 1.0)) {
        *err = "bad value '" + std::string(v) + "' for --oracle-acceptance (0..1)";
        return false;
      }
      a->oracle_acceptance = v2;
    } else if (k == "--kv-type") {
      if (!value()) return false;
      const std::string t = v;
      if (t == "f32")
        a->kv_type = KvType::kF32;
      else if (t == "f16")
        a->kv_type = KvType::kF16;
      else if (t == "q8_0")
        a->kv_type = KvType::kQ8_0;
      else {
        *err = "unknown KV type '" + t + "' (f32, f16 or q8_0)";
        return false;
      }
    } else if (k == "--backend") {
      if (!value()) return false;
      const std::string b = v;
      if (b == "cpu")
        a->backend = BackendKind::kCpu;
      else if (b == "ref")
        a->backend = BackendKind::kRef;
      else if (b == "cuda")
        a->backend = BackendKind::kCuda;
      else {
        *err = "unknown backend '" + b + "' (cpu, ref or cuda)";
        return false;
      }
    } else {
      *err = "unknown option " + k;
      return false;
    }
  }
  if (a->model.empty()) *err = "-m FILE is required";
  if (err->empty() && a->mtp > 0 && a->tg.empty()) *err = "--mtp needs decode tests (tg, -n N)";
  if (err->empty() && !a->chat.empty() && a->mtp == 0) *err = "--chat needs --mtp K";
  return err->empty();
}

struct Result {
  std::string test;  // "pp512", "tg128", "tg128 @ d4096"
  int64_t n = 0;
  bool prefill = true;
  int64_t depth = 0;  // context tokens before the test
  std::vector<double> tokens_per_s;
  double peer_mean = 0, peer_sd = 0;  // 0: not measured
  double Mean() const {
    double s = 0;
    for (double x : tokens_per_s) s += x;
    return tokens_per_s.empty() ? 0 : s / static_cast<double>(tokens_per_s.size());
  }
  double Sd() const {
    if (tokens_per_s.size() < 2) return 0;
    const double m = Mean();
    double s = 0;
    for (double x : tokens_per_s) s += (x - m) * (x - m);
    return std::sqrt(s / static_cast<double>(tokens_per_s.size() - 1));
  }
};

std::vector<int32_t> RandomTokens(int64_t n, int64_t n_vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> d(0, static_cast<int32_t>(n_vocab - 1));
  std::vector<int32_t> out(static_cast<size_t>(n));
  for (int32_t& t : out) t = d(rng);
  return out;
}

// Untimed: leaves the session holding exactly `context` (see the file comment): empty -> Reset;
// else a Feed that extends the live state, or restores the checkpoint at D-1 after a test ran.
Status ToContext(Session& s, std::span<const int32_t> context) {
  if (context.empty()) {
    s.Reset();
    return OkStatus();
  }
  const int64_t checkpoint = static_cast<int64_t>(context.size()) - 1;
  FeedOptions o;
  o.checkpoint_positions = std::span<const int64_t>(&checkpoint, 1);
  QWENRT_RETURN_IF_ERROR(s.Feed(context, o, nullptr));
  if (s.size() != static_cast<int64_t>(context.size()))
    return InternalError("depth context holds {} tokens, not {}", s.size(), context.size());
  return OkStatus();
}

// Seconds of one run of the test after `context`. tokens: for pp, context followed by the test's
// tokens (Feed takes the whole sequence and extends the live state); for tg, the tokens to decode.
StatusOr<double> RunOnce(Session& s, const Result& r, std::span<const int32_t> context,
                         const std::vector<int32_t>& tokens) {
  QWENRT_RETURN_IF_ERROR(ToContext(s, context));
  const int64_t capacity = s.capacity();
  const auto t0 = std::chrono::steady_clock::now();
  if (r.prefill) {
    QWENRT_RETURN_IF_ERROR(s.Feed(tokens, {}, nullptr));
  } else {
    for (int64_t i = 0; i < r.n; ++i)
      QWENRT_RETURN_IF_ERROR(s.DecodeStep(tokens[static_cast<size_t>(i)]));
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // initial_capacity covers context + test; growth here would have been timed.
  if (s.capacity() != capacity)
    return InternalError("the KV grew from {} to {} positions inside the timed run", capacity,
                         s.capacity());
  return secs;
}

// llama-bench's JSON for the same tests; fills peer_mean / peer_sd. Returns false with a message.
bool RunPeer(const SpeedArgs& a, std::vector<Result>* results, std::string* err) {
  std::string pp = "0", tg = "0", depth;
  for (const Result& r : *results) {
    if (r.depth != a.depth.front()) continue;  // the same n for every depth
    std::string& list = r.prefill ? pp : tg;
    list = (list == "0" ? "" : list + ",") + std::to_string(r.n);
  }
  // Depth 0 alone passes no -d: the command is the one from before -d existed.
  if (a.depth != std::vector<int64_t>{0}) {
    for (int64_t d : a.depth) depth += (depth.empty() ? " -d " : ",") + std::to_string(d);
  }
  const int threads =
      a.threads > 0 ? a.threads : static_cast<int>(std::thread::hardware_concurrency());
  const std::string cmd = "'" + a.peer + "/bin/llama-bench' -m '" + a.model + "' -p " + pp +
                          " -n " + tg + depth + " -t " + std::to_string(threads) + " -r " +
                          std::to_string(a.reps) + " -o json 2>/dev/null";
  std::FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) {
    *err = "cannot run " + cmd;
    return false;
  }
  std::string out;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  const int rc = pclose(p);
  auto j = nlohmann::json::parse(out, nullptr, false);
  if (rc != 0 || j.is_discarded() || !j.is_array()) {
    *err = "llama-bench failed (exit " + std::to_string(rc) + "): " + cmd;
    return false;
  }
  for (const auto& e : j) {
    const int64_t np = e.value("n_prompt", 0), ng = e.value("n_gen", 0), nd = e.value("n_depth", 0);
    for (Result& r : *results) {
      if (nd != r.depth) continue;
      if ((r.prefill && np == r.n && ng == 0) || (!r.prefill && ng == r.n && np == 0)) {
        r.peer_mean = e.value("avg_ts", 0.0);
        r.peer_sd = e.value("stddev_ts", 0.0);
      }
    }
  }
  return true;
}

// --mtp: one tg test's speculative and plain greedy runs, and their counts.
struct MtpResult {
  std::string test;  // "tg128 mtp3 A0.80" (oracle tokens), "tg128 mtp3 head" (the head's own)
  std::vector<double> plain_tps, spec_tps;
  int64_t drafted = 0, accepted = 0, passes = 0, decoded = 0;
  bool identical = true;                 // the speculative runs emitted the plain run's tokens
  std::vector<int32_t> context, tokens;  // what the runs started from and the plain greedy tokens
  // The peer (llama-server) on the same context: plain and MTP greedy decoding.
  std::vector<double> peer_plain_tps, peer_spec_tps;
  int64_t peer_drafted = 0, peer_accepted = 0;
  std::optional<bool> peer_same;  // its greedy tokens equal ours (unset: not measured)
};

double MeanOf(const std::vector<double>& x) {
  double s = 0;
  for (double v : x) s += v;
  return x.empty() ? 0 : s / static_cast<double>(x.size());
}

// Greedy Generate of n tokens after `context` (at least one token: Generate samples from the
// logits Feed left); drafts from `draft` when max_draft > 0. Returns seconds.
StatusOr<double> GenerateOnce(Session& s, std::span<const int32_t> context, int64_t n,
                              int64_t max_draft, DraftSource* draft, std::vector<int32_t>* out,
                              GenerateReport* report, DraftLengthPolicy* policy = nullptr) {
  QWENRT_RETURN_IF_ERROR(ToContext(s, context));
  GenerateOptions g;
  g.max_tokens = n;
  g.sampler = [](const float* x, int64_t V) {
    return static_cast<int32_t>(std::max_element(x, x + V) - x);
  };
  g.max_draft = max_draft;
  g.draft = draft;
  g.draft_policy = policy;
  out->clear();
  const auto t0 = std::chrono::steady_clock::now();
  QWENRT_RETURN_IF_ERROR(s.Generate(g, out, report));
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Where --mtp's drafts come from and what they cost, for the report.
struct DraftMode {
  bool head = false;                 // the file has an MTP head: the speculative session runs it
  std::optional<double> acceptance;  // oracle tokens right with this probability; unset: the head's
  std::string Describe() const {
    const std::string tokens = acceptance
                                   ? fmt::format("oracle tokens, acceptance {:.2f}", *acceptance)
                                   : std::string("the head's own tokens");
    return head ? "draft cost: real MTP head (" + tokens + ")"
                : "draft cost: none (no MTP head; " + tokens + ")";
  }
};

// plain: the session of the plain greedy runs; spec: the speculative runs' (kept in step with the
// MTP head when mode.head; else the same session).
StatusOr<MtpResult> RunMtp(const SpeedArgs& a, const DraftMode& mode, Session& plain_s,
                           Session& spec_s, const Result& r, std::span<const int32_t> context) {
  MtpResult m;
  m.test = mode.acceptance ? fmt::format("{} mtp{} A{:.2f}", r.test, a.mtp, *mode.acceptance)
                           : fmt::format("{} mtp{} head", r.test, a.mtp);
  if (a.adaptive) m.test += " adaptive";
  DraftLengthPolicy policy(a.mtp);
  std::vector<int32_t> plain, spec;
  for (int rep = -1; rep < a.reps; ++rep) {
    GenerateReport gr;
    QWENRT_ASSIGN_OR_RETURN(double secs,
                            GenerateOnce(plain_s, context, r.n, 0, nullptr, &plain, &gr));
    if (rep >= 0) m.plain_tps.push_back(static_cast<double>(plain.size()) / secs);
  }
  m.context.assign(context.begin(), context.end());
  m.tokens = plain;
  std::vector<int32_t> truth(context.begin(), context.end());
  truth.insert(truth.end(), plain.begin(), plain.end());
  for (int rep = -1; rep < a.reps; ++rep) {
    const uint32_t seed = static_cast<uint32_t>(rep + 2) * 7919u;
    MtpDraftSource head;
    std::optional<testing::OracleDraftSource> free_oracle;
    std::optional<testing::CostedOracleDraftSource> costed_oracle;
    DraftSource* draft = &head;
    if (mode.acceptance && mode.head) {
      draft = &costed_oracle.emplace(&head, truth, *mode.acceptance, seed, spec_s.n_vocab());
    } else if (mode.acceptance) {
      draft = &free_oracle.emplace(truth, *mode.acceptance, seed, spec_s.n_vocab());
    }
    GenerateReport gr;
    QWENRT_ASSIGN_OR_RETURN(double secs, GenerateOnce(spec_s, context, r.n, a.mtp, draft, &spec,
                                                      &gr, a.adaptive ? &policy : nullptr));
    // A head that drafts nothing (no valid MTP state) would make this a plain run with a wrong
    // label; with 3+ tokens to generate there is a draft call after a prefilled context.
    if (mode.head && r.n > 2 && gr.drafted == 0)
      return InternalError("the MTP head drafted nothing in {} tokens (mtp_ready: {})", r.n,
                           spec_s.mtp_ready());
    m.identical = m.identical && spec == plain;
    if (rep < 0) continue;
    m.spec_tps.push_back(static_cast<double>(spec.size()) / secs);
    m.drafted += gr.drafted;
    m.accepted += gr.accepted;
    m.passes += gr.verify_passes;
    m.decoded += gr.n_decoded;
  }
  return m;
}

// --peer with --mtp: llama-server's greedy decoding of as many tokens after the same context,
// plain and with its MTP drafting (--spec-type draft-mtp, up to K drafts), one warm-up and
// a.reps timed requests each; its own timings (predicted tokens/s, drafts made and accepted).
bool RunPeerMtp(const SpeedArgs& a, std::vector<MtpResult>* mtp, std::string* err) {
  int64_t ctx = 0;
  for (const MtpResult& m : *mtp) {
    ctx = std::max<int64_t>(ctx, static_cast<int64_t>(m.context.size() + m.tokens.size()));
  }
  const int threads =
      a.threads > 0 ? a.threads : static_cast<int>(std::thread::hardware_concurrency());
  for (const bool spec : {false, true}) {
    std::vector<std::string> args = {"-c", std::to_string(ctx + a.mtp + 64), "--no-webui"};
    if (spec) {
      args.insert(args.end(),
                  {"--spec-type", "draft-mtp", "--spec-draft-n-max", std::to_string(a.mtp)});
    }
    PeerServer server;
    if (!server.Start(a.peer, a.model, threads, args, 120.0, err)) return false;
    for (MtpResult& m : *mtp) {
      const nlohmann::json body = {{"prompt", m.context},  {"n_predict", m.tokens.size()},
                                   {"temperature", 0.0},   {"top_k", 1},
                                   {"ignore_eos", true},   {"cache_prompt", false},
                                   {"return_tokens", true}};
      for (int rep = -1; rep < a.reps; ++rep) {
        nlohmann::json reply;
        if (!server.Post("/completion", body, &reply, err)) return false;
        const auto& t = reply["timings"];
        if (!t.is_object()) {
          *err = "llama-server's reply has no timings";
          return false;
        }
        if (reply.contains("tokens") && reply["tokens"].is_array() && !reply["tokens"].empty()) {
          const bool same = reply["tokens"].get<std::vector<int32_t>>() == m.tokens;
          m.peer_same = m.peer_same.value_or(true) && same;
        }
        if (rep < 0) continue;
        (spec ? m.peer_spec_tps : m.peer_plain_tps).push_back(t.value("predicted_per_second", 0.0));
        if (spec) {
          m.peer_drafted += t.value("draft_n", int64_t{0});
          m.peer_accepted += t.value("draft_n_accepted", int64_t{0});
        }
      }
    }
  }
  return true;
}

// One verify pass of 1+k tokens against one decode step, after `context`: milliseconds per call,
// averaged over `calls` calls. reject: every draft rejected (the state is rebuilt: pre-pass copy
// plus one token of delta rule replayed; the session grows by one token per call, as a decode
// step does); else every draft accepted (no rebuild; it grows by 1+k).
StatusOr<double> VerifyMs(Session& s, std::span<const int32_t> context, int64_t k, bool reject,
                          int calls) {
  QWENRT_RETURN_IF_ERROR(ToContext(s, context));
  const int64_t V = s.n_vocab();
  std::vector<int32_t> tokens = RandomTokens(k + 1, V, static_cast<uint32_t>(k));
  const VerifyChooser choose = [&](int64_t i, const float*) -> int32_t {
    if (i + 1 >= static_cast<int64_t>(tokens.size())) return 0;
    return reject ? (tokens[static_cast<size_t>(i + 1)] + 1) % static_cast<int32_t>(V)
                  : tokens[static_cast<size_t>(i + 1)];
  };
  const auto t0 = std::chrono::steady_clock::now();
  for (int c = 0; c < calls; ++c) {
    if (k == 0) {
      QWENRT_RETURN_IF_ERROR(s.DecodeStep(tokens[0]));
      continue;
    }
    VerifyResult vr;
    QWENRT_RETURN_IF_ERROR(s.Verify(tokens, choose, &vr));
  }
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() /
         calls;
}

}  // namespace

int RunSpeed(int argc, char** argv) {
  SpeedArgs a;
  std::string err;
  if (!ParseSpeedArgs(argc, argv, &a, &err)) {
    if (err == "help") {
      std::fputs(kSpeedUsage, stdout);
      return 0;
    }
    std::fprintf(stderr, "qwenrt-bench: %s\n%s", err.c_str(), kSpeedUsage);
    return 2;
  }
  ModelLoadOptions load;
  load.pack_weights = a.pack;
  const auto t_load = std::chrono::steady_clock::now();
  auto loaded = Model::Load(a.model, load);
  if (!loaded.ok()) {
    std::fprintf(stderr, "qwenrt-bench: %s\n", loaded.status().ToString().c_str());
    return 1;
  }
  std::shared_ptr<const Model> model = *loaded;
  const double load_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t_load).count();
  std::fprintf(stderr, "qwenrt-bench: loaded in %.2f s; packed weights: %.1f MiB in %.2f s\n",
               load_s, static_cast<double>(model->packed_bytes()) / (1 << 20),
               model->pack_seconds());
  // Resident weights as the library counts them and as the kernel does (VmRSS, VmHWM: the
  // process so far, the load's peak included), to check packing in place (docs/memory.md).
  std::fprintf(stderr,
               "qwenrt-bench: resident weights %.1f MiB (released file pages %.1f MiB); %s\n",
               static_cast<double>(model->resident_weight_bytes()) / (1 << 20),
               static_cast<double>(model->released_bytes()) / (1 << 20), ProcMemory().c_str());
  // --chat: the context of the depth-0 speculative runs, one user message through the template.
  std::vector<int32_t> chat_context;
  if (!a.chat.empty()) {
    auto chat_model = ChatModel::Create(model);
    ChatRequest req;
    req.messages.push_back({Role::kUser, a.chat, std::nullopt, {}});
    StatusOr<std::string> text =
        chat_model.ok() ? (*chat_model)->Render(req) : StatusOr<std::string>(chat_model.status());
    if (!text.ok()) {
      std::fprintf(stderr, "qwenrt-bench: --chat: %s\n", text.status().ToString().c_str());
      return 1;
    }
    chat_context = (*chat_model)->tokenizer().Encode(*text, /*parse_special=*/true);
  }
  SessionParams p;
  p.backend = a.backend;
  p.n_threads = a.threads;
  p.split_invariant = a.split_invariant;
  p.cuda_graphs = a.cuda_graphs;
  p.kv_type = a.kv_type;
  p.checkpoint_tail = 0;  // llama-bench takes no snapshots either
  int64_t longest = 1;
  for (int64_t n : a.pp) longest = std::max(longest, n);
  for (int64_t n : a.tg) longest = std::max(longest, n);
  const int64_t deepest = *std::max_element(a.depth.begin(), a.depth.end());
  // No KV growth timed (Create caps it at the context); --mtp's runs need one more token of
  // context and up to K positions of a last verify pass, and its cost table 6 passes of 1+K.
  p.initial_capacity = std::max<int64_t>(deepest, static_cast<int64_t>(chat_context.size())) +
                       std::max(longest + a.mtp + 1, 6 * (a.mtp + 1) + 1);
  auto session = Session::Create(model, p);
  if (!session.ok()) {
    std::fprintf(stderr, "qwenrt-bench: %s\n", session.status().ToString().c_str());
    return 1;
  }
  DraftMode mode;
  mode.head = !model->weights().mtp.empty();
  mode.acceptance = a.oracle_acceptance;
  if (!mode.head && !mode.acceptance) mode.acceptance = 0.8;  // nothing else can draft
  // The speculative runs' session: with a head, a second one that keeps the head in step (its
  // upkeep is part of speculation's cost, not of the plain runs').
  std::unique_ptr<Session> spec_owner;
  Session* spec_session = session->get();
  if (a.mtp > 0 && mode.head) {
    SessionParams sp = p;
    sp.mtp = true;
    auto s2 = Session::Create(model, sp);
    if (!s2.ok()) {
      std::fprintf(stderr, "qwenrt-bench: MTP session: %s\n", s2.status().ToString().c_str());
      return 1;
    }
    spec_owner = std::move(*s2);
    spec_session = spec_owner.get();
  }
  // llama-bench's order: every depth in turn, its pp tests, then its tg tests.
  std::vector<Result> results;
  for (int64_t d : a.depth) {
    const std::string at = d > 0 ? " @ d" + std::to_string(d) : "";
    for (int64_t n : a.pp) results.push_back({"pp" + std::to_string(n) + at, n, true, d, {}});
    for (int64_t n : a.tg) results.push_back({"tg" + std::to_string(n) + at, n, false, d, {}});
  }
  const int64_t V = model->config().n_vocab;
  // Every depth's context is a prefix of one random sequence (fixed seed).
  const std::vector<int32_t> context_tokens = RandomTokens(deepest, V, 0x5eed);
  for (Result& r : results) {
    const std::span<const int32_t> context(context_tokens.data(), static_cast<size_t>(r.depth));
    std::vector<int32_t> tokens = RandomTokens(r.n, V, static_cast<uint32_t>(r.n));
    if (r.prefill) tokens.insert(tokens.begin(), context.begin(), context.end());
    for (int rep = -1; rep < a.reps; ++rep) {  // rep -1: warm-up
      StatusOr<double> secs = RunOnce(**session, r, context, tokens);
      if (!secs.ok()) {
        std::fprintf(stderr, "qwenrt-bench: %s: %s\n", r.test.c_str(),
                     secs.status().ToString().c_str());
        return 1;
      }
      if (rep >= 0) r.tokens_per_s.push_back(static_cast<double>(r.n) / *secs);
    }
  }
  std::vector<MtpResult> mtp;
  std::vector<std::array<double, 3>> verify_cost;  // per k = 1..K: decode, reject-all, accept-all
  if (a.mtp > 0) {
    // Speculation needs logits to start from: at least one token of context.
    const std::vector<int32_t> one = chat_context.empty() ? RandomTokens(1, V, 0x0e) : chat_context;
    for (const Result& r : results) {
      if (r.prefill) continue;
      std::span<const int32_t> context(context_tokens.data(), static_cast<size_t>(r.depth));
      if (context.empty()) context = one;
      auto m = RunMtp(a, mode, **session, *spec_session, r, context);
      if (!m.ok()) {
        std::fprintf(stderr, "qwenrt-bench: %s --mtp: %s\n", r.test.c_str(),
                     m.status().ToString().c_str());
        return 1;
      }
      mtp.push_back(std::move(*m));
    }
    std::span<const int32_t> context(context_tokens.data(), static_cast<size_t>(deepest));
    if (context.empty()) context = one;
    const int calls = 6;
    for (int64_t k = 1; k <= a.mtp; ++k) {
      std::array<double, 3> row{};
      for (int rep = -1; rep < a.reps; ++rep) {  // the mean of the timed reps
        for (int which = 0; which < 3; ++which) {
          auto ms = VerifyMs(**session, context, which == 0 ? 0 : k, which == 1, calls);
          if (!ms.ok()) {
            std::fprintf(stderr, "qwenrt-bench: verify cost: %s\n", ms.status().ToString().c_str());
            return 1;
          }
          if (rep >= 0) row[static_cast<size_t>(which)] += *ms / a.reps;
        }
      }
      verify_cost.push_back(row);
    }
  }
  // A peer that fails (a crash of its CPU variant, a file it refuses) leaves "-" in its columns and
  // the exit status at 1, but our own figures, which took the time, are still printed.
  bool peer_failed = false;
  if (!a.peer.empty() && !RunPeer(a, &results, &err)) {
    std::fprintf(stderr, "qwenrt-bench: %s\n", err.c_str());
    peer_failed = true;
  }
  if (!a.peer.empty() && !mtp.empty() && !RunPeerMtp(a, &mtp, &err)) {
    std::fprintf(stderr, "qwenrt-bench: peer MTP: %s\n", err.c_str());
    peer_failed = true;
  }
  const int threads = (*session)->params().n_threads > 0
                          ? (*session)->params().n_threads
                          : static_cast<int>(std::thread::hardware_concurrency());
  if (a.json) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const Result& r : results) {
      nlohmann::ordered_json e = {{"model", a.model},
                                  {"backend", BackendName(a.backend)},
                                  {"threads", threads},
                                  {"test", r.test},
                                  {"n_prompt", r.prefill ? r.n : 0},
                                  {"n_gen", r.prefill ? 0 : r.n},
                                  {"n_depth", r.depth},
                                  {"tokens_per_s", r.Mean()},
                                  {"stddev", r.Sd()},
                                  {"samples", r.tokens_per_s}};
      if (r.peer_mean > 0) {
        e["peer_tokens_per_s"] = r.peer_mean;
        e["peer_stddev"] = r.peer_sd;
        e["ratio"] = r.Mean() / r.peer_mean;
      }
      out.push_back(std::move(e));
    }
    for (const MtpResult& m : mtp) {
      out.push_back(
          {{"model", a.model},
           {"backend", BackendName(a.backend)},
           {"threads", threads},
           {"test", m.test},
           {"draft_cost", mode.head ? "real MTP head" : "none (no MTP head)"},
           {"oracle_acceptance", mode.acceptance ? nlohmann::ordered_json(*mode.acceptance)
                                                 : nlohmann::ordered_json(nullptr)},
           {"plain_tokens_per_s", MeanOf(m.plain_tps)},
           {"tokens_per_s", MeanOf(m.spec_tps)},
           {"speedup", MeanOf(m.spec_tps) / MeanOf(m.plain_tps)},
           {"drafted", m.drafted},
           {"accepted", m.accepted},
           {"verify_passes", m.passes},
           {"identical", m.identical}});
      if (!m.peer_spec_tps.empty()) {
        auto& e = out.back();
        e["peer_plain_tokens_per_s"] = MeanOf(m.peer_plain_tps);
        e["peer_tokens_per_s"] = MeanOf(m.peer_spec_tps);
        e["peer_drafted"] = m.peer_drafted;
        e["peer_accepted"] = m.peer_accepted;
        e["ratio_vs_peer"] = MeanOf(m.spec_tps) / MeanOf(m.peer_spec_tps);
        e["peer_same_tokens"] = m.peer_same.value_or(false);
      }
    }
    for (size_t k = 0; k < verify_cost.size(); ++k) {
      const auto& c = verify_cost[k];
      out.push_back({{"model", a.model},
                     {"test", fmt::format("verify 1+{}", k + 1)},
                     {"decode_step_ms", c[0]},
                     {"verify_reject_all_ms", c[1]},
                     {"verify_accept_all_ms", c[2]}});
    }
    std::printf("%s\n", out.dump(2).c_str());
    return peer_failed ? 1 : 0;
  }
  std::printf("| model | backend | threads | test | qwenrt t/s |%s\n",
              a.peer.empty() ? "" : " llama.cpp t/s | ratio |");
  std::printf("|---|---|---|---|---|%s\n", a.peer.empty() ? "" : "---|---|");
  for (const Result& r : results) {
    std::printf("| %s | %s | %d | %s | %.2f ± %.2f |", a.model.c_str(), BackendName(a.backend),
                threads, r.test.c_str(), r.Mean(), r.Sd());
    if (!a.peer.empty()) {
      if (r.peer_mean > 0) {
        std::printf(" %.2f ± %.2f | %.2fx |", r.peer_mean, r.peer_sd, r.Mean() / r.peer_mean);
      } else {
        std::printf(" - | - |");
      }
    }
    std::printf("\n");
  }
  if (!mtp.empty()) {
    std::printf("\n%s\n", mode.Describe().c_str());
    std::printf(
        "\n| test | plain greedy t/s | speculative t/s | speedup | acceptance | mean accepted "
        "per pass | tokens per pass | same tokens |\n|---|---|---|---|---|---|---|---|\n");
    for (const MtpResult& m : mtp) {
      const double acc =
          m.drafted > 0 ? static_cast<double>(m.accepted) / static_cast<double>(m.drafted) : 0;
      const double per_pass =
          m.passes > 0 ? static_cast<double>(m.accepted) / static_cast<double>(m.passes) : 0;
      const double tok_pass =
          m.passes > 0 ? static_cast<double>(m.decoded) / static_cast<double>(m.passes) : 0;
      std::printf("| %s | %.2f | %.2f | %.2fx | %.3f | %.2f | %.2f | %s |\n", m.test.c_str(),
                  MeanOf(m.plain_tps), MeanOf(m.spec_tps), MeanOf(m.spec_tps) / MeanOf(m.plain_tps),
                  acc, per_pass, tok_pass, m.identical ? "yes" : "NO");
    }
    if (!mtp.front().peer_spec_tps.empty()) {
      std::printf(
          "\nllama.cpp (llama-server, the same context and number of tokens, greedy):\n\n| test | "
          "plain t/s | MTP t/s | speedup | acceptance | qwenrt MTP / llama.cpp MTP | same tokens "
          "|\n|---|---|---|---|---|---|---|\n");
      for (const MtpResult& m : mtp) {
        const double acc = m.peer_drafted > 0 ? static_cast<double>(m.peer_accepted) /
                                                    static_cast<double>(m.peer_drafted)
                                              : 0;
        std::printf("| %s | %.2f | %.2f | %.2fx | %.3f | %.2fx | %s |\n", m.test.c_str(),
                    MeanOf(m.peer_plain_tps), MeanOf(m.peer_spec_tps),
                    MeanOf(m.peer_spec_tps) / MeanOf(m.peer_plain_tps), acc,
                    MeanOf(m.spec_tps) / MeanOf(m.peer_spec_tps),
                    !m.peer_same ? "-" : (*m.peer_same ? "yes" : "no"));
      }
    }
    std::printf(
        "\n| verify pass | decode step ms | verify ms (all rejected) | ratio | verify ms (all "
        "accepted) | ratio |\n|---|---|---|---|---|---|\n");
    for (size_t k = 0; k < verify_cost.size(); ++k) {
      const auto& c = verify_cost[k];
      std::printf("| 1+%zu | %.3f | %.3f | %.2fx | %.3f | %.2fx |\n", k + 1, c[0], c[1],
                  c[1] / c[0], c[2], c[2] / c[0]);
    }
  }
  return peer_failed ? 1 : 0;
}

}  // namespace qwenrt::bench

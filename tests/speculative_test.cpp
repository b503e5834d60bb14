// Speculative decoding (session/speculative.h, docs/speculative.md): Session::Verify leaves the
// session bit for bit as DecodeStep over the accepted tokens would, and Generate with drafts emits
// the same tokens, shows the sampler the same logits and leaves the same session as plain
// Generate, whatever the drafts (oracle at acceptance 0, 0.5, 1; random), across a second turn
// with prefix resume, after Fork and after SaveToMemory / LoadFromMemory, on packed and unpacked
// weights. The session is compared through SaveToMemory: transcript, KV rows, recurrent state
// (delta rule and conv windows), checkpoints and last logits, byte for byte.
#include "session/speculative.h"

#include <atomic>
#include <cstring>

#include "quick_mode.h"
#include "session_test_util.h"
#include "testing/draft_sources.h"

namespace qwenrt {
namespace {

using test::Argmax;
using test::NewSession;
using test::RandomTokens;

std::shared_ptr<const Model> Load(const std::string& name, bool pack) {
  ModelLoadOptions o;
  o.pack_weights = pack;
  auto m = Model::Load(std::string(QWENRT_TEST_DATA) + "/" + name, o);
  if (!m.ok()) FAIL(m.status().ToString());
  return *m;
}

struct Variant {
  const char* name;
  std::shared_ptr<const Model> model;
  BackendKind kind;
};

// The models and paths the exactness holds on: f32 and q4_K weights, packed and unpacked, the
// SIMD backend, and (`with_ref`) the reference one.
std::vector<Variant> Variants(bool with_ref = false) {
  static std::vector<Variant> v = [] {
    std::vector<Variant> out;
    out.push_back({"micro f32 cpu", Load("micro-s1-f32.gguf", false), BackendKind::kCpu});
    out.push_back({"tiny q4km cpu packed", Load("tiny-s1-q4km.gguf", true), BackendKind::kCpu});
    out.push_back({"tiny q4km cpu", Load("tiny-s1-q4km.gguf", false), BackendKind::kCpu});
    out.push_back({"tiny q4km ref", out[2].model, BackendKind::kRef});
    return out;
  }();
  if (testing::QuickMode()) return {v[0], v[1]};
  if (!with_ref) return {v[0], v[1], v[2]};
  return v;
}

SessionParams Params(BackendKind kind, int64_t checkpoint_every = 0) {
  SessionParams p = test::TestParams(kind, 64);
  p.checkpoint_every = checkpoint_every;
  return p;
}

std::vector<uint8_t> Bytes(Session& s) {
  auto b = s.SaveToMemory();
  if (!b.ok()) FAIL(b.status().ToString());
  return std::move(b).value();
}

bool SameFloats(std::span<const float> a, std::span<const float> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// What one Generate produced: the tokens and the logits the sampler saw for each.
struct Run {
  std::vector<int32_t> tokens;
  std::vector<std::vector<float>> seen;
  GenerateReport report;
  Status status;
};

struct RunOptions {
  int64_t max_tokens = 20;
  std::vector<int32_t> stop;
  int64_t stop_after = -1;    // on_token returns false on this many-th token (1-based); -1: never
  int64_t cancel_after = -1;  // on_token sets the cancel flag on this many-th token; -1: never
  DraftSource* draft = nullptr;
  int64_t max_draft = 0;
};

Run Generate(Session& s, const RunOptions& ro) {
  Run run;
  GenerateOptions g;
  g.max_tokens = ro.max_tokens;
  g.stop_tokens = ro.stop;
  g.sampler = [&](const float* logits, int64_t V) {
    run.seen.emplace_back(logits, logits + V);
    return Argmax(logits, V);
  };
  int64_t seen_tokens = 0;
  std::atomic<bool> cancel{false};
  g.cancel = &cancel;
  if (ro.stop_after > 0 || ro.cancel_after > 0) {
    g.on_token = [&](int32_t) {
      ++seen_tokens;
      if (seen_tokens == ro.cancel_after) cancel = true;  // lands inside a verify window
      return ro.stop_after < 0 || seen_tokens < ro.stop_after;
    };
  }
  g.draft = ro.draft;
  g.max_draft = ro.max_draft;
  run.status = s.Generate(g, &run.tokens, &run.report);
  return run;
}

void RequireSameRun(const Run& plain, const Run& spec) {
  REQUIRE(plain.status.code() == spec.status.code());
  REQUIRE(plain.tokens == spec.tokens);
  REQUIRE(plain.seen.size() == spec.seen.size());
  for (size_t i = 0; i < plain.seen.size(); ++i) {
    INFO("emitted position " << i);
    REQUIRE(SameFloats(plain.seen[i], spec.seen[i]));
  }
  CHECK(plain.report.n_sampled == spec.report.n_sampled);
  CHECK(plain.report.n_decoded == spec.report.n_decoded);
  CHECK(plain.report.hit_stop == spec.report.hit_stop);
}

void RequireSameSession(Session& a, Session& b) {
  REQUIRE(a.transcript() == b.transcript());
  REQUIRE(SameFloats(a.last_logits(), b.last_logits()));
  REQUIRE(Bytes(a) == Bytes(b));
}

TEST_CASE("Verify leaves the session DecodeStep leaves over the accepted tokens") {
  const std::vector<int64_t> ks =
      testing::QuickMode() ? std::vector<int64_t>{1, 4} : std::vector<int64_t>{1, 2, 4, 14};
  for (const Variant& v : Variants(true)) {
    for (int64_t every : {int64_t{0}, int64_t{3}}) {
      const int64_t V = v.model->config().n_vocab;
      auto base = NewSession(v.model, Params(v.kind, every));
      REQUIRE(base->Feed(RandomTokens(21, 7, V), {}, nullptr).ok());
      for (int64_t k : ks) {
        // The scalar reference backend is slow: one window length, no checkpoints; the longest
        // window on the first model only.
        if (v.kind == BackendKind::kRef && (k != 4 || every > 0)) continue;
        if (k > 4 && v.model != Variants()[0].model) continue;
        for (int64_t j = 0; j <= k; ++j) {
          if (k > 4 && j % 5 != 4 && j != 0) continue;  // the long window: a few cut points
          for (bool stop_early : {false, true}) {
            if (stop_early && (j == k || every > 0)) continue;
            INFO(v.name << " every " << every << " k " << k << " j " << j << " stop "
                        << stop_early);
            const std::vector<int32_t> tokens = RandomTokens(k + 1, static_cast<uint32_t>(k), V);
            auto spec = base->Fork().value();
            auto plain = base->Fork().value();
            VerifyResult r;
            int64_t calls = 0;
            const VerifyChooser choose = [&](int64_t i, const float* logits) -> int32_t {
              ++calls;
              REQUIRE(i <= j);
              if (i < j) return tokens[static_cast<size_t>(i + 1)];  // agree
              if (stop_early) return -1;
              // Disagree (or, after the last draft, any token): the next token.
              const int32_t c = Argmax(logits, V);
              return i + 1 < static_cast<int64_t>(tokens.size()) &&
                             c == tokens[static_cast<size_t>(i + 1)]
                         ? (c + 1) % static_cast<int32_t>(V)
                         : c;
            };
            REQUIRE(spec->Verify(tokens, choose, &r).ok());
            CHECK(calls == j + 1);
            CHECK(r.accepted == j);
            CHECK((r.next < 0) == stop_early);
            for (int64_t i = 0; i <= j; ++i)
              REQUIRE(plain->DecodeStep(tokens[static_cast<size_t>(i)]).ok());
            RequireSameSession(*spec, *plain);
            CHECK(SameFloats(spec->logits(), plain->logits()));
            CHECK(spec->checkpoints().size() == plain->checkpoints().size());
            // And both go on alike.
            REQUIRE(spec->DecodeStep(5).ok());
            REQUIRE(plain->DecodeStep(5).ok());
            RequireSameSession(*spec, *plain);
          }
        }
      }
    }
  }
}

TEST_CASE("Verify is exact when its pass spans ubatches and without split invariance") {
  const Variant v = Variants()[1];
  const int64_t V = v.model->config().n_vocab;
  for (bool split_invariant : {true, false}) {
    SessionParams p = Params(v.kind);
    p.ubatch = 2;  // the 1+k tokens run in pieces: the capture is filled at offsets
    p.split_invariant = split_invariant;
    auto base = NewSession(v.model, p);
    REQUIRE(base->Feed(RandomTokens(9, 2, V), {}, nullptr).ok());
    const std::vector<int32_t> tokens = RandomTokens(5, 4, V);
    for (int64_t j = 0; j <= 4; ++j) {
      INFO("split_invariant " << split_invariant << " j " << j);
      auto spec = base->Fork().value();
      auto plain = base->Fork().value();
      VerifyResult r;
      const VerifyChooser choose = [&](int64_t i, const float*) -> int32_t {
        if (i < j) return tokens[static_cast<size_t>(i + 1)];
        return i + 1 < 5 ? (tokens[static_cast<size_t>(i + 1)] + 1) % static_cast<int32_t>(V) : 0;
      };
      REQUIRE(spec->Verify(tokens, choose, &r).ok());
      REQUIRE(r.accepted == j);
      for (int64_t i = 0; i <= j; ++i)
        REQUIRE(plain->DecodeStep(tokens[static_cast<size_t>(i)]).ok());
      RequireSameSession(*spec, *plain);
    }
  }
}

TEST_CASE("Verify errors and cancellation leave the session as it was") {
  const Variant v = Variants()[0];
  const int64_t V = v.model->config().n_vocab;
  SessionParams p = Params(v.kind);
  p.max_context = 30;
  auto s = NewSession(v.model, p);
  REQUIRE(s->Feed(RandomTokens(20, 3, V), {}, nullptr).ok());
  const std::vector<uint8_t> before = Bytes(*s);
  const VerifyChooser never = [](int64_t, const float*) -> int32_t {
    FAIL("the chooser ran");
    return -1;
  };
  VerifyResult r;
  CHECK(s->Verify({}, never, &r).code() == StatusCode::kInvalidArgument);
  CHECK(s->Verify(RandomTokens(kMaxVerifyDraft + 2, 1, V), never, &r).code() ==
        StatusCode::kInvalidArgument);
  CHECK(s->Verify(std::vector<int32_t>{1, static_cast<int32_t>(V)}, never, &r).code() ==
        StatusCode::kInvalidArgument);
  CHECK(s->Verify(RandomTokens(11, 1, V), never, &r).code() == StatusCode::kContextFull);
  std::atomic<bool> cancel{true};
  CHECK(s->Verify(RandomTokens(3, 1, V), never, &r, &cancel).code() == StatusCode::kCancelled);
  CHECK(Bytes(*s) == before);
  // Verify's buffers: none before the first pass, then sized by the longest pass so far.
  CHECK(s->verify_bytes() == 0);
  const VerifyChooser stop = [](int64_t, const float*) -> int32_t { return -1; };
  auto fork = s->Fork().value();
  REQUIRE(fork->Verify(RandomTokens(3, 1, V), stop, &r).ok());
  const size_t b3 = fork->verify_bytes();
  CHECK(b3 > fork->state_bytes());
  REQUIRE(fork->Verify(RandomTokens(5, 1, V), stop, &r).ok());
  const size_t b5 = fork->verify_bytes();
  CHECK(b5 > b3);
  REQUIRE(fork->Verify(RandomTokens(2, 1, V), stop, &r).ok());
  CHECK(fork->verify_bytes() == b5);
  // The engine's pieces refuse speculation rather than run it wrong.
  testing::RandomDraftSource random(1, V);
  GenerateOptions g;
  g.sampler = Argmax;
  g.max_draft = 2;
  g.draft = &random;
  std::vector<int32_t> out;
  GenerateJob job;
  CHECK(s->BeginGenerate(g, &out, nullptr, &job).code() == StatusCode::kUnsupported);
  g.draft = nullptr;
  CHECK(s->Generate(g, &out, nullptr).code() == StatusCode::kInvalidArgument);
  g.draft = &random;
  g.max_draft = kMaxVerifyDraft + 1;
  CHECK(s->Generate(g, &out, nullptr).code() == StatusCode::kInvalidArgument);
  CHECK(Bytes(*s) == before);
}

// Plain greedy from `s` (a fork of it) and speculative greedy from another fork, for each draft
// length and acceptance; the runs and the sessions afterwards must be identical.
void CompareFrom(Session& s, const RunOptions& base_options, int64_t V, uint32_t seed,
                 bool full = true) {
  auto plain_s = s.Fork().value();
  const Run plain = Generate(*plain_s, base_options);
  std::vector<int32_t> truth = s.transcript();
  truth.insert(truth.end(), plain.tokens.begin(), plain.tokens.end());
  const std::vector<int64_t> ks =
      !full || testing::QuickMode() ? std::vector<int64_t>{1, 3} : std::vector<int64_t>{1, 2, 3, 4};
  const std::vector<double> as =
      full ? std::vector<double>{0.0, 0.5, 1.0} : std::vector<double>{0.5, 1.0};
  for (int64_t k : ks) {
    for (double acceptance : as) {
      INFO("k " << k << " acceptance " << acceptance);
      testing::OracleDraftSource oracle(truth, acceptance, seed + static_cast<uint32_t>(k), V);
      RunOptions o = base_options;
      o.draft = &oracle;
      o.max_draft = k;
      auto spec_s = s.Fork().value();
      const Run spec = Generate(*spec_s, o);
      RequireSameRun(plain, spec);
      RequireSameSession(*plain_s, *spec_s);
      if (acceptance == 1.0 && base_options.stop_after < 0 && base_options.stop.empty() &&
          base_options.cancel_after < 0)
        CHECK(spec.report.accepted > 0);
      if (acceptance == 0.0) CHECK(spec.report.accepted == 0);
      CHECK(spec.report.accepted <= spec.report.drafted);
      CHECK(oracle.accepted_calls() == spec.report.verify_passes);
    }
    if (!full) continue;
    testing::RandomDraftSource random(seed, V);
    RunOptions o = base_options;
    o.draft = &random;
    o.max_draft = k;
    auto spec_s = s.Fork().value();
    RequireSameRun(plain, Generate(*spec_s, o));
    RequireSameSession(*plain_s, *spec_s);
  }
}

TEST_CASE("Speculative greedy Generate equals plain Generate bit for bit") {
  for (const Variant& v : Variants()) {
    for (int64_t every : {int64_t{0}, int64_t{4}}) {
      if (every > 0 && v.model != Variants()[0].model) continue;  // checkpoints: one model
      INFO(v.name << " checkpoint_every " << every);
      const int64_t V = v.model->config().n_vocab;
      auto s = NewSession(v.model, Params(v.kind, every));
      REQUIRE(s->Feed(RandomTokens(17, 11, V), {}, nullptr).ok());
      RunOptions o;
      CompareFrom(*s, o, V, 1);
      // Ends: a stop token that greedy decoding reaches (drafts past it are discarded), max_tokens,
      // on_token returning false, a cancel set from on_token (it lands inside a verify window).
      auto probe = s->Fork().value();
      const Run ref = Generate(*probe, o);
      RunOptions stop = o;
      stop.stop = {ref.tokens[6]};
      CompareFrom(*s, stop, V, 2, false);
      RunOptions shortr = o;
      shortr.max_tokens = 5;
      CompareFrom(*s, shortr, V, 3, false);
      RunOptions until = o;
      until.stop_after = 7;
      CompareFrom(*s, until, V, 4, false);
      RunOptions cancelled = o;
      cancelled.cancel_after = 6;
      CompareFrom(*s, cancelled, V, 5, false);
    }
  }
}

TEST_CASE("Speculation composes with prefix resume, Fork and save/load") {
  for (const Variant& v : Variants()) {
    INFO(v.name);
    const int64_t V = v.model->config().n_vocab;
    auto plain = NewSession(v.model, Params(v.kind));
    auto spec = NewSession(v.model, Params(v.kind));
    const std::vector<int32_t> prompt = RandomTokens(13, 21, V);
    REQUIRE(plain->Feed(prompt, {}, nullptr).ok());
    REQUIRE(spec->Feed(prompt, {}, nullptr).ok());
    // Turn 1: speculative with a half-right oracle.
    auto probe = plain->Fork().value();
    const Run truth_run = Generate(*probe, RunOptions());
    std::vector<int32_t> truth = prompt;
    truth.insert(truth.end(), truth_run.tokens.begin(), truth_run.tokens.end());
    testing::OracleDraftSource oracle(truth, 0.5, 5, V);
    RunOptions so;
    so.draft = &oracle;
    so.max_draft = 3;
    RequireSameRun(Generate(*plain, RunOptions()), Generate(*spec, so));
    RequireSameSession(*plain, *spec);
    // Turn 2: the transcript re-fed with new tokens after it (prefix resume), then compared from
    // there for every k and acceptance.
    std::vector<int32_t> turn2 = plain->transcript();
    const std::vector<int32_t> extra = RandomTokens(6, 22, V);
    turn2.insert(turn2.end(), extra.begin(), extra.end());
    FeedReport pr, sr;
    REQUIRE(plain->Feed(turn2, {}, &pr).ok());
    REQUIRE(spec->Feed(turn2, {}, &sr).ok());
    CHECK(sr.reused_tokens == pr.reused_tokens);
    CHECK(sr.reused_tokens > 0);
    RequireSameSession(*plain, *spec);
    CompareFrom(*spec, RunOptions(), V, 6, false);
    // From a fork (CompareFrom forks), and from a session loaded from the speculative one's bytes.
    auto loaded = NewSession(v.model, Params(v.kind));
    REQUIRE(loaded->LoadFromMemory(Bytes(*spec)).ok());
    CompareFrom(*loaded, RunOptions(), V, 7, false);
  }
}

}  // namespace
}  // namespace qwenrt

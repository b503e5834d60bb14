// Session invariants on the fixture models: prefix resume == full recompute (bit for bit on the
// reference path), checkpoint restore after a divergence, KV growth without re-prefill, save/load
// into a new Model, fork, cancellation, and errors that leave the session untouched.
#include "session/session.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "quick_mode.h"
#include "session/session_file.h"
#include "session_test_util.h"

namespace qwenrt {
namespace {

using test::Argmax;
using test::Copy;
using test::NewSession;
using test::RandomTokens;

const std::string kMicro = std::string(QWENRT_TEST_DATA) + "/micro-s1-f32.gguf";
const std::string kTiny = std::string(QWENRT_TEST_DATA) + "/tiny-s1-q4km.gguf";

std::shared_ptr<const Model> Load(const std::string& path) {
  auto m = Model::Load(path);
  if (!m.ok()) FAIL(m.status().ToString());
  return *m;
}

// Shared per test binary: a Model is immutable and may be shared.
std::shared_ptr<const Model> Micro() {
  static std::shared_ptr<const Model> m = Load(kMicro);
  return m;
}
std::shared_ptr<const Model> Tiny() {
  static std::shared_ptr<const Model> m = Load(kTiny);
  return m;
}

std::vector<int32_t> Concat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::vector<int32_t> Prefix(const std::vector<int32_t>& a, int64_t n) {
  return std::vector<int32_t>(a.begin(), a.begin() + n);
}

SessionParams RefParams(int64_t ubatch = 64) { return test::TestParams(BackendKind::kRef, ubatch); }

GenerateOptions Greedy(int64_t n) {
  GenerateOptions g;
  g.max_tokens = n;
  g.sampler = Argmax;
  return g;
}

// Logits of every position of `tokens` from one prefill in a fresh session: [N, V].
std::vector<float> FullLogits(std::shared_ptr<const Model> m, const SessionParams& p,
                              const std::vector<int32_t>& tokens) {
  auto s = NewSession(std::move(m), p);
  FeedOptions o;
  o.all_logits = true;
  FeedReport r;
  Status st = s->Feed(tokens, o, &r);
  REQUIRE(st.ok());
  REQUIRE(r.prefilled_tokens == static_cast<int64_t>(tokens.size()));
  auto l = s->logits();
  return std::vector<float>(l.begin(), l.end());
}

// Bitwise comparison of logits rows [from, from + rows) of `full` with `part`.
bool SameRows(const std::vector<float>& full, int64_t from, std::span<const float> part,
              int64_t V) {
  if (part.size() % static_cast<size_t>(V) != 0) return false;
  if (static_cast<size_t>(from * V) + part.size() > full.size()) return false;
  return std::memcmp(full.data() + from * V, part.data(), part.size_bytes()) == 0;
}

TEST_CASE("Turn 2 extends the live state and equals a full re-prefill bit for bit", "[ref]") {
  auto m = Micro();
  const int64_t V = m->config().n_vocab;
  std::vector<std::string> trace;
  SessionParams p = RefParams();
  p.trace = [&](const std::string& line) { trace.push_back(line); };
  auto s = NewSession(m, p);

  std::vector<int32_t> turn1 = RandomTokens(300, 1);
  FeedReport r;
  REQUIRE(s->Feed(turn1, {}, &r).ok());
  CHECK(r.prompt_tokens == 300);
  CHECK(r.reused_tokens == 0);
  CHECK(r.prefilled_tokens == 300);
  CHECK(r.checkpoints_created == 2);  // end and end - 4
  std::vector<int32_t> reply;
  REQUIRE(s->Generate(Greedy(20), &reply, nullptr).ok());
  REQUIRE(reply.size() == 20);
  CHECK(s->size() == 320);

  std::vector<int32_t> turn2 = Concat(Concat(turn1, reply), RandomTokens(25, 2));
  FeedOptions o;
  o.all_logits = true;
  REQUIRE(s->Feed(turn2, o, &r).ok());
  CHECK(r.common_prefix == 320);
  CHECK(r.reused_tokens == 320);
  CHECK(r.prefilled_tokens == 25);
  CHECK(r.checkpoint_pos == -1);
  CHECK(r.miss_reason == MissReason::kNone);
  CHECK(r.miss_detail.empty());
  REQUIRE(trace.size() == 3);
  CHECK(trace[2] == "prefill 25 tokens from position 320 (live state, common prefix 320 of 345)");

  std::vector<float> full = FullLogits(m, p, turn2);
  CHECK(SameRows(full, 320, s->logits(), V));
  CHECK(SameRows(full, 344, s->last_logits(), V));
  // The generated reply tokens were decoded one at a time; the full prefill ran them in batches.
  for (int64_t i = 300; i < 320; ++i) CHECK(Argmax(full.data() + (i - 1) * V, V) == turn2[i]);

  // Greedy continuation equals the fresh session's.
  auto fresh = NewSession(m, p);
  REQUIRE(fresh->Feed(turn2, {}, nullptr).ok());
  std::vector<int32_t> a, b;
  REQUIRE(s->Generate(Greedy(12), &a, nullptr).ok());
  REQUIRE(fresh->Generate(Greedy(12), &b, nullptr).ok());
  CHECK(a == b);
  CHECK(Copy(s->last_logits()) == Copy(fresh->last_logits()));

  // Feeding the same sequence again computes nothing and keeps the last logits.
  std::vector<int32_t> now = s->transcript();
  std::vector<float> before = Copy(s->last_logits());
  REQUIRE(s->Feed(now, {}, &r).ok());
  CHECK(r.prefilled_tokens == 0);
  CHECK(r.reused_tokens == static_cast<int64_t>(now.size()));
  CHECK(Copy(s->last_logits()) == before);
}

TEST_CASE("Divergence inside the previous turn resumes from the newest checkpoint before it",
          "[ref]") {
  auto m = Micro();
  const int64_t V = m->config().n_vocab;
  SessionParams p = RefParams();
  auto s = NewSession(m, p);
  std::vector<int32_t> prompt1 = RandomTokens(200, 3);
  REQUIRE(s->Feed(prompt1, {}, nullptr).ok());
  std::vector<int32_t> reply;
  REQUIRE(s->Generate(Greedy(30), &reply, nullptr).ok());

  // Re-rendered history without the reasoning: the last 2 prompt tokens and the reply change.
  std::vector<int32_t> turn2 =
      Concat(Concat(Prefix(prompt1, 198), RandomTokens(15, 4)), RandomTokens(20, 5));
  FeedOptions o;
  o.all_logits = true;
  FeedReport r;
  REQUIRE(s->Feed(turn2, o, &r).ok());
  CHECK(r.common_prefix == 198);
  CHECK(r.checkpoint_pos == 196);  // the automatic "4 before the end" checkpoint of turn 1
  CHECK(r.reused_tokens == 196);
  CHECK(r.prefilled_tokens == static_cast<int64_t>(turn2.size()) - 196);
  CHECK(r.miss_reason == MissReason::kNoCheckpoint);
  CHECK(r.miss_detail == "no checkpoint between 197 and 198");
  std::vector<float> full = FullLogits(m, p, turn2);
  CHECK(SameRows(full, 196, s->logits(), V));

  // With a checkpoint requested exactly at the divergence, nothing before it is recomputed.
  auto s2 = NewSession(m, p);
  std::vector<int64_t> at = {198};
  FeedOptions o2;
  o2.checkpoint_positions = at;
  REQUIRE(s2->Feed(prompt1, o2, nullptr).ok());
  REQUIRE(s2->Generate(Greedy(30), &reply, nullptr).ok());
  REQUIRE(s2->Feed(turn2, o, &r).ok());
  CHECK(r.checkpoint_pos == 198);
  CHECK(r.reused_tokens == 198);
  CHECK(r.miss_reason == MissReason::kNone);
  CHECK(SameRows(full, 198, s2->logits(), V));
  // Checkpoints beyond the divergence were dropped with the dead branch.
  for (const auto& c : s2->checkpoints()) CHECK(c.pos <= static_cast<int64_t>(turn2.size()));
}

TEST_CASE("A strict prefix of the transcript restores to it with correct logits", "[ref]") {
  auto m = Micro();
  const int64_t V = m->config().n_vocab;
  SessionParams p = RefParams(32);
  p.checkpoint_every = 64;
  auto s = NewSession(m, p);
  std::vector<int32_t> a = RandomTokens(200, 6);
  REQUIRE(s->Feed(a, {}, nullptr).ok());
  FeedReport r;
  REQUIRE(s->Feed(Prefix(a, 150), {}, &r).ok());
  CHECK(r.common_prefix == 150);
  CHECK(r.checkpoint_pos == 128);
  CHECK(r.prefilled_tokens == 22);
  CHECK(r.miss_reason == MissReason::kEndsInsideTranscript);
  CHECK(s->size() == 150);
  std::vector<float> full = FullLogits(m, p, a);
  CHECK(SameRows(full, 149, s->last_logits(), V));
  // A prefix ending exactly at a checkpoint still re-evaluates its last token for the logits.
  REQUIRE(s->Feed(Prefix(a, 128), {}, &r).ok());
  CHECK(r.checkpoint_pos == 64);
  CHECK(r.prefilled_tokens == 64);
  CHECK(SameRows(full, 127, s->last_logits(), V));
  // Without any usable checkpoint the prefill starts from scratch and says why.
  REQUIRE(s->Feed(Prefix(a, 30), {}, &r).ok());
  CHECK(r.checkpoint_pos == -1);
  CHECK(r.reused_tokens == 0);
  CHECK(r.prefilled_tokens == 30);
  CHECK(r.miss_reason == MissReason::kEndsInsideTranscript);
  CHECK_FALSE(r.miss_detail.empty());
  CHECK(SameRows(full, 29, s->last_logits(), V));
}

// Past a 4,096-position initial capacity (1,024 in quick mode: the reference path's attention is
// quadratic, and under the sanitizers 4k tokens took minutes; tests/quick_mode.h).
TEST_CASE("KV growth keeps everything: past the initial capacity, and across new pages",
          "[ref][slow]") {
  auto m = Micro();
  const int64_t V = m->config().n_vocab;
  const int64_t cap = qwenrt::testing::QuickMode() ? 1024 : 4096;
  SessionParams p = RefParams(512);
  p.initial_capacity = cap;
  auto s = NewSession(m, p);
  std::vector<int32_t> all = RandomTokens(cap + 183, 7);
  FeedReport r;
  REQUIRE(s->Feed(Prefix(all, cap - 96), {}, &r).ok());
  CHECK(s->capacity() == cap);
  // Crosses the capacity: the cache grows a page (256 positions) at a time, by one page.
  REQUIRE(s->Feed(Prefix(all, cap + 101), {}, &r).ok());
  CHECK(r.reused_tokens == cap - 96);
  CHECK(r.prefilled_tokens == 197);
  CHECK(s->capacity() == cap + 256);
  FeedOptions o;
  o.all_logits = true;
  REQUIRE(s->Feed(all, o, &r).ok());
  CHECK(r.reused_tokens == cap + 101);
  CHECK(r.prefilled_tokens == 82);
  std::vector<float> full = FullLogits(m, p, all);
  CHECK(SameRows(full, cap + 101, s->logits(), V));

  // A small capacity that grows inside one turn and again in the next.
  SessionParams q = RefParams(64);
  q.initial_capacity = 100;
  auto t = NewSession(m, q);
  REQUIRE(t->Feed(Prefix(all, 250), {}, &r).ok());
  const int64_t cap1 = t->capacity();
  CHECK(cap1 >= 250);
  CHECK(cap1 < 420);
  REQUIRE(t->Feed(Prefix(all, 420), o, &r).ok());
  CHECK(r.reused_tokens == 250);
  CHECK(r.prefilled_tokens == 170);
  CHECK(t->capacity() >= 420);  // grew again (another page), contents kept
  std::vector<float> full420 = FullLogits(m, q, Prefix(all, 420));
  CHECK(SameRows(full420, 250, t->logits(), V));
}

std::string TempPath(const char* name) {
  return (std::filesystem::temp_directory_path() /
          (std::string("qwenrt_session_") + std::to_string(::getpid()) + "_" + name))
      .string();
}

TEST_CASE("Save and load into a new Model continues bit-identically", "[ref]") {
  auto m = Micro();
  const int64_t V = m->config().n_vocab;
  SessionParams p = RefParams();
  auto s = NewSession(m, p);
  std::vector<int32_t> prompt = RandomTokens(150, 8);
  REQUIRE(s->Feed(prompt, {}, nullptr).ok());
  std::vector<int32_t> reply;
  REQUIRE(s->Generate(Greedy(10), &reply, nullptr).ok());
  const std::vector<uint8_t> blob = {1, 2, 3, 250};
  std::string path = TempPath("save.qws");
  REQUIRE(s->SaveToFile(path, blob).ok());
  auto mem = s->SaveToMemory(blob);
  REQUIRE(mem.ok());
  CHECK(*ReadWholeFile(path) == *mem);

  auto m2 = Load(kMicro);  // a new Model, as a new process would have
  auto loaded = NewSession(m2, p);
  std::vector<uint8_t> got;
  REQUIRE(loaded->LoadFromFile(path, &got).ok());
  CHECK(got == blob);
  CHECK(loaded->transcript() == s->transcript());
  CHECK(Copy(loaded->last_logits()) == Copy(s->last_logits()));
  CHECK(loaded->checkpoints().size() == s->checkpoints().size());
  auto from_mem = NewSession(m2, p);
  REQUIRE(from_mem->LoadFromMemory(*mem, nullptr).ok());

  // Continue all three the same way: extension, then a divergence that needs a checkpoint.
  std::vector<int32_t> turn2 = Concat(s->transcript(), RandomTokens(30, 9));
  std::vector<int32_t> turn3 = Concat(Prefix(prompt, 148), RandomTokens(40, 10));
  FeedOptions o;
  o.all_logits = true;
  for (const auto& next : {turn2, turn3}) {
    FeedReport ra, rb, rc;
    REQUIRE(s->Feed(next, o, &ra).ok());
    std::vector<float> la = Copy(s->logits());
    REQUIRE(loaded->Feed(next, o, &rb).ok());
    CHECK(Copy(loaded->logits()) == la);
    REQUIRE(from_mem->Feed(next, o, &rc).ok());
    CHECK(Copy(from_mem->logits()) == la);
    CHECK(ra.reused_tokens == rb.reused_tokens);
    CHECK(ra.reused_tokens == rc.reused_tokens);
  }
  std::vector<int32_t> ga, gb;
  REQUIRE(s->Generate(Greedy(8), &ga, nullptr).ok());
  REQUIRE(loaded->Generate(Greedy(8), &gb, nullptr).ok());
  CHECK(ga == gb);
  (void)V;

  SECTION("damaged, truncated, foreign and missing files are refused and change nothing") {
    std::vector<int32_t> before = loaded->transcript();
    std::vector<float> logits_before = Copy(loaded->last_logits());
    std::vector<uint8_t> bad = *mem;
    bad[bad.size() / 2] ^= 0x10;
    CHECK(loaded->LoadFromMemory(bad, nullptr).code() == StatusCode::kBadFormat);
    std::vector<uint8_t> cut(mem->begin(),
                             mem->begin() + static_cast<std::ptrdiff_t>(mem->size() - 100));
    CHECK(loaded->LoadFromMemory(cut, nullptr).code() == StatusCode::kBadFormat);
    CHECK(loaded->LoadFromMemory(std::vector<uint8_t>{}, nullptr).code() == StatusCode::kBadFormat);
    CHECK(loaded->LoadFromFile(path + ".missing", nullptr).code() == StatusCode::kIo);
    // Consistent checksum but inconsistent contents (a token id outside the vocabulary).
    {
      std::vector<uint8_t> forged = *mem;
      auto parsed = ParseSessionFile(forged, m2->fingerprint());
      REQUIRE(parsed.ok());
      size_t toks_at = 0;
      for (const auto& sec : parsed->sections)
        if (sec.tag == SectionTag("TOKS"))
          toks_at = static_cast<size_t>(sec.payload.data() - forged.data());
      REQUIRE(toks_at > 0);
      int32_t bad_id = 100000;
      std::memcpy(forged.data() + toks_at + 8, &bad_id, 4);
      uint32_t crc = Crc32(forged.data() + kSessionHeaderSize, forged.size() - kSessionHeaderSize);
      std::memcpy(forged.data() + 24, &crc, 4);
      Status fs = loaded->LoadFromMemory(forged, nullptr);
      CHECK(fs.code() == StatusCode::kBadFormat);
      CHECK(fs.message().find("vocabulary") != std::string::npos);
    }
    auto other = NewSession(Tiny(), p);
    Status st = other->LoadFromFile(path, nullptr);
    CHECK(st.code() == StatusCode::kInvalidArgument);
    CHECK(other->size() == 0);
    CHECK(loaded->transcript() == before);
    CHECK(Copy(loaded->last_logits()) == logits_before);
    // A context smaller than the saved transcript is refused too.
    SessionParams small = p;
    small.max_context = 100;
    auto tight = NewSession(m2, small);
    CHECK(tight->LoadFromMemory(*mem, nullptr).code() == StatusCode::kContextFull);
  }
  std::filesystem::remove(path);
}

TEST_CASE("An empty session saves, loads and forks", "[ref]") {
  auto m = Micro();
  auto s = NewSession(m, RefParams());
  auto mem = s->SaveToMemory();
  REQUIRE(mem.ok());
  auto t = NewSession(m, RefParams());
  REQUIRE(t->Feed(RandomTokens(10, 51), {}, nullptr).ok());
  std::vector<uint8_t> blob = {9};
  REQUIRE(t->LoadFromMemory(*mem, &blob).ok());
  CHECK(blob.empty());
  CHECK(t->size() == 0);
  CHECK(t->last_logits().empty());
  CHECK(t->checkpoints().empty());
  auto f = s->Fork();
  REQUIRE(f.ok());
  std::vector<int32_t> a = RandomTokens(20, 52);
  REQUIRE((*f)->Feed(a, {}, nullptr).ok());
  REQUIRE(t->Feed(a, {}, nullptr).ok());
  CHECK(Copy((*f)->last_logits()) == Copy(t->last_logits()));
}

TEST_CASE("Fork: both branches equal their uninterrupted equivalents", "[ref]") {
  auto m = Micro();
  SessionParams p = RefParams();
  auto s = NewSession(m, p);
  std::vector<int32_t> prompt = RandomTokens(120, 11);
  REQUIRE(s->Feed(prompt, {}, nullptr).ok());
  auto forked = s->Fork();
  REQUIRE(forked.ok());
  auto f = std::move(forked).value();
  CHECK(f->transcript() == s->transcript());
  CHECK(f->checkpoints().size() == s->checkpoints().size());

  std::vector<int32_t> b1 = Concat(prompt, RandomTokens(20, 12));
  std::vector<int32_t> b2 =
      Concat(Prefix(prompt, 117), RandomTokens(25, 13));  // uses the fork's checkpoint
  FeedOptions o;
  o.all_logits = true;
  FeedReport r1, r2;
  REQUIRE(s->Feed(b1, o, &r1).ok());
  REQUIRE(f->Feed(b2, o, &r2).ok());
  CHECK(r1.reused_tokens == 120);
  CHECK(r2.checkpoint_pos == 116);
  const int64_t V = m->config().n_vocab;
  CHECK(SameRows(FullLogits(m, p, b1), 120, s->logits(), V));
  CHECK(SameRows(FullLogits(m, p, b2), 116, f->logits(), V));
  std::vector<int32_t> ga, gb, fa, fb;
  REQUIRE(s->Generate(Greedy(6), &ga, nullptr).ok());
  REQUIRE(f->Generate(Greedy(6), &gb, nullptr).ok());
  auto fresh1 = NewSession(m, p);
  auto fresh2 = NewSession(m, p);
  REQUIRE(fresh1->Feed(b1, {}, nullptr).ok());
  REQUIRE(fresh2->Feed(b2, {}, nullptr).ok());
  REQUIRE(fresh1->Generate(Greedy(6), &fa, nullptr).ok());
  REQUIRE(fresh2->Generate(Greedy(6), &fb, nullptr).ok());
  CHECK(ga == fa);
  CHECK(gb == fb);
}

TEST_CASE("Prefill progress: once per batch, monotonic, ending at the tokens prefilled", "[ref]") {
  auto m = Micro();
  auto s = NewSession(m, RefParams(32));
  std::vector<int32_t> tokens = RandomTokens(100, 15);
  std::vector<std::pair<int64_t, int64_t>> calls;
  FeedOptions o;
  o.progress = [&](int64_t done, int64_t total) {
    calls.emplace_back(done, total);
    return true;
  };
  FeedReport r;
  REQUIRE(s->Feed(std::span(tokens).first(40), o, &r).ok());
  // 40 tokens in batches of at most 32: at least two reports, done rising strictly to 40.
  REQUIRE(calls.size() >= 2);
  for (size_t i = 0; i < calls.size(); ++i) {
    CHECK(calls[i].second == 40);
    if (i > 0) CHECK(calls[i].first > calls[i - 1].first);
  }
  CHECK(calls.back().first == 40);

  // Extending the transcript: the total counts only the tokens this feed runs.
  calls.clear();
  REQUIRE(s->Feed(tokens, o, &r).ok());
  REQUIRE(r.prefilled_tokens == 60);
  REQUIRE(!calls.empty());
  CHECK(calls.back() == std::pair<int64_t, int64_t>(60, 60));
  // Nothing to prefill: no report.
  calls.clear();
  REQUIRE(s->Feed(tokens, o, &r).ok());
  CHECK(calls.empty());
}

TEST_CASE("Prefill progress returning false cancels through the cancel path", "[ref]") {
  auto m = Micro();
  const int64_t V = m->config().n_vocab;
  SessionParams p = RefParams(32);
  std::vector<int32_t> tokens = RandomTokens(200, 16);
  std::vector<float> full = FullLogits(m, p, tokens);
  for (int k : {1, 3}) {
    auto s = NewSession(m, p);
    int seen = 0;
    int64_t done_at_stop = -1;
    FeedOptions o;
    o.progress = [&](int64_t done, int64_t) {
      if (++seen != k) return true;
      done_at_stop = done;
      return false;
    };
    FeedReport r;
    Status st = s->Feed(tokens, o, &r);
    INFO("cancel at report " << k);
    CHECK(st.code() == StatusCode::kCancelled);
    CHECK(seen == k);  // no report after the cancelling one
    // As for the cancel flag: the session holds exactly what was prefilled, with exact logits.
    REQUIRE(done_at_stop > 0);
    CHECK(s->size() == done_at_stop);
    CHECK(s->transcript() == Prefix(tokens, done_at_stop));
    CHECK(SameRows(full, done_at_stop - 1, s->last_logits(), V));
    // The same feed again without cancelling equals a session that never was cancelled.
    o.progress = nullptr;
    REQUIRE(s->Feed(tokens, o, &r).ok());
    CHECK(r.reused_tokens == done_at_stop);
    CHECK(s->transcript() == tokens);
    CHECK(SameRows(full, 199, s->last_logits(), V));
  }
}

TEST_CASE("Cancellation mid-prefill leaves a consistent, resumable session", "[ref]") {
  auto m = Micro();
  const int64_t V = m->config().n_vocab;
  SessionParams p = RefParams(32);
  auto s = NewSession(m, p);
  std::vector<int32_t> tokens = RandomTokens(200, 14);
  std::atomic<bool> cancel{false};
  FeedOptions o;
  o.cancel = &cancel;
  o.progress = [&](int64_t done, int64_t) {
    if (done >= 100) cancel = true;  // as if another thread pressed stop
    return true;
  };
  FeedReport r;
  Status st = s->Feed(tokens, o, &r);
  CHECK(st.code() == StatusCode::kCancelled);
  CHECK(s->size() == 128);  // batches end on multiples of 32
  CHECK(s->transcript() == Prefix(tokens, 128));
  std::vector<float> full = FullLogits(m, p, tokens);
  CHECK(SameRows(full, 127, s->last_logits(), V));

  cancel = false;
  REQUIRE(s->Feed(tokens, o, &r).ok());
  CHECK(r.reused_tokens == 128);
  CHECK(r.prefilled_tokens == 72);
  CHECK(SameRows(full, 199, s->last_logits(), V));

  // Generation: cancelled between tokens, everything sampled so far is evaluated.
  GenerateOptions g = Greedy(50);
  g.cancel = &cancel;
  int seen = 0;
  g.on_token = [&](int32_t) {
    if (++seen == 5) cancel = true;
    return true;
  };
  std::vector<int32_t> out;
  GenerateReport gr;
  CHECK(s->Generate(g, &out, &gr).code() == StatusCode::kCancelled);
  CHECK(out.size() == 5);
  CHECK(gr.n_decoded == 5);
  CHECK(s->size() == 205);
  cancel = false;
  std::vector<int32_t> more;
  REQUIRE(s->Generate(Greedy(3), &more, nullptr).ok());
  auto fresh = NewSession(m, p);
  REQUIRE(fresh->Feed(Concat(tokens, out), {}, nullptr).ok());
  std::vector<int32_t> fmore;
  REQUIRE(fresh->Generate(Greedy(3), &fmore, nullptr).ok());
  CHECK(more == fmore);

  // Cancellation from another thread at an arbitrary moment: whatever happened, feeding again
  // completes and gives the full-prefill logits.
  auto s2 = NewSession(m, p);
  cancel = false;
  FeedOptions o2;
  o2.cancel = &cancel;
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    cancel = true;
  });
  Status st2 = s2->Feed(tokens, o2, &r);
  stopper.join();
  CHECK((st2.ok() || st2.code() == StatusCode::kCancelled));
  CHECK(s2->transcript() == Prefix(tokens, s2->size()));
  cancel = false;
  REQUIRE(s2->Feed(tokens, o2, &r).ok());
  CHECK(SameRows(full, 199, s2->last_logits(), V));
}

TEST_CASE("Errors leave the session as it was", "[ref]") {
  auto m = Micro();
  SessionParams p = RefParams();
  p.max_context = 64;
  auto s = NewSession(m, p);
  std::vector<int32_t> a = RandomTokens(40, 15);
  REQUIRE(s->Feed(a, {}, nullptr).ok());
  std::vector<float> logits = Copy(s->last_logits());
  auto unchanged = [&] {
    CHECK(s->transcript() == a);
    CHECK(Copy(s->last_logits()) == logits);
  };
  std::vector<int32_t> bad = Concat(Prefix(a, 10), {5, 512, 7});
  CHECK(s->Feed(bad, {}, nullptr).code() == StatusCode::kInvalidArgument);
  unchanged();
  bad[11] = -1;
  CHECK(s->Feed(bad, {}, nullptr).code() == StatusCode::kInvalidArgument);
  unchanged();
  CHECK(s->Feed(std::vector<int32_t>{}, {}, nullptr).code() == StatusCode::kInvalidArgument);
  unchanged();
  CHECK(s->Feed(RandomTokens(65, 16), {}, nullptr).code() == StatusCode::kContextFull);
  unchanged();
  CHECK(s->DecodeStep(512).code() == StatusCode::kInvalidArgument);
  unchanged();
  GenerateOptions g = Greedy(5);
  g.sampler = [](const float*, int64_t) { return int32_t{-3}; };
  std::vector<int32_t> out;
  CHECK(s->Generate(g, &out, nullptr).code() == StatusCode::kInvalidArgument);
  CHECK(out.empty());
  unchanged();
  // Filling the context: generation stops with ContextFull, keeping what fit.
  CHECK(s->Generate(Greedy(100), &out, nullptr).code() == StatusCode::kContextFull);
  CHECK(s->size() == 64);
  CHECK(out.size() == 24);
  auto fresh = NewSession(m, RefParams());
  CHECK(fresh->Generate(Greedy(1), &out, nullptr).code() ==
        StatusCode::kInvalidArgument);  // no logits yet
  SessionParams neg = RefParams();
  neg.ubatch = 0;
  CHECK(Session::Create(m, neg).status().code() == StatusCode::kInvalidArgument);
  CHECK(Session::Create(nullptr, RefParams()).status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("On-demand and decode-time checkpoints are restorable; Reset forgets everything",
          "[ref]") {
  auto m = Micro();
  const int64_t V = m->config().n_vocab;
  SessionParams p = RefParams();
  p.checkpoint_every = 10;
  auto s = NewSession(m, p);
  std::vector<int32_t> prompt = RandomTokens(55, 31);
  REQUIRE(s->Feed(prompt, {}, nullptr).ok());
  std::vector<int32_t> reply;
  REQUIRE(
      s->Generate(Greedy(12), &reply, nullptr).ok());  // positions 56..67: decode checkpoint at 60
  REQUIRE(s->Checkpoint().ok());                       // and one at 67
  std::vector<int64_t> pos;
  for (const auto& c : s->checkpoints()) pos.push_back(c.pos);
  CHECK(std::find(pos.begin(), pos.end(), 60) != pos.end());
  CHECK(pos.back() == 67);
  std::vector<int32_t> history = Concat(prompt, reply);
  FeedReport r;
  std::vector<int32_t> b = Concat(Prefix(history, 63), RandomTokens(5, 32));
  REQUIRE(s->Feed(b, {}, &r).ok());
  CHECK(r.checkpoint_pos == 60);
  CHECK(SameRows(FullLogits(m, p, b), static_cast<int64_t>(b.size()) - 1, s->last_logits(), V));
  s->Reset();
  CHECK(s->size() == 0);
  CHECK(s->checkpoints().empty());
  CHECK(s->last_logits().empty());
  REQUIRE(s->Feed(b, {}, &r).ok());
  CHECK(r.reused_tokens == 0);
  CHECK(r.prefilled_tokens == static_cast<int64_t>(b.size()));
}

TEST_CASE("Checkpoint budget bounds the bytes held", "[ref]") {
  auto m = Micro();
  SessionParams p = RefParams();
  auto probe = NewSession(m, p);
  const size_t snap = probe->state_bytes();
  p.checkpoint_budget_bytes = static_cast<int64_t>(3 * snap);
  p.checkpoint_every = 16;
  auto s = NewSession(m, p);
  std::vector<int32_t> all = RandomTokens(400, 17);
  FeedReport r;
  for (int64_t n = 100; n <= 400; n += 100) {
    REQUIRE(s->Feed(Prefix(all, n), {}, &r).ok());
    CHECK(r.checkpoint_bytes <= 3 * snap);
    CHECK(r.checkpoint_bytes == s->checkpoint_bytes());
    CHECK(r.n_checkpoints == static_cast<int64_t>(s->checkpoints().size()));
  }
  // The newest checkpoint of the latest turn (at the end of the last prefill) survives.
  auto cps = s->checkpoints();
  REQUIRE_FALSE(cps.empty());
  CHECK(cps.back().pos == 400);
  // Default budget: 8 snapshots.
  SessionParams every = RefParams();
  every.checkpoint_every = 8;
  auto e = NewSession(m, every);
  REQUIRE(e->Feed(all, {}, &r).ok());
  CHECK(e->checkpoint_bytes() <= 8 * snap);
  CHECK(e->checkpoints().size() == 8);
}

}  // namespace
}  // namespace qwenrt

namespace qwenrt {
namespace {

// The CPU path on the Q4_K_M fixture. With split_invariant the resumed session must match a full
// re-prefill bit for bit; with the default (chunked delta rule for long ubatches) the tokens a turn
// decoded one by one are recomputed in chunks by the full prefill, which rounds differently, so
// only closeness and the reuse numbers are checked there.
TEST_CASE("CPU path: turn 2 and a divergence reuse the session; split-invariant mode is exact",
          "[cpu]") {
  auto m = Tiny();
  const int64_t V = m->config().n_vocab;
  for (bool invariant : {true, false}) {
    INFO("split_invariant " << invariant);
    SessionParams p;
    p.backend = BackendKind::kCpu;
    p.n_threads = 2;
    p.ubatch = 128;
    p.split_invariant = invariant;
    auto s = NewSession(m, p);
    std::vector<int32_t> prompt = RandomTokens(300, 21);
    REQUIRE(s->Feed(prompt, {}, nullptr).ok());
    std::vector<int32_t> reply;
    REQUIRE(s->Generate(Greedy(16), &reply, nullptr).ok());
    std::vector<int32_t> turn2 = Concat(Concat(prompt, reply), RandomTokens(25, 22));
    std::vector<int32_t> turn3 =
        Concat(Concat(Prefix(turn2, 339), RandomTokens(9, 23)), RandomTokens(20, 24));
    FeedOptions o;
    o.all_logits = true;
    FeedReport r;
    REQUIRE(s->Feed(turn2, o, &r).ok());
    CHECK(r.reused_tokens == 316);
    CHECK(r.prefilled_tokens == 25);
    std::vector<float> got2 = Copy(s->logits());
    REQUIRE(s->Feed(turn3, o, &r).ok());
    CHECK(r.checkpoint_pos == 337);  // 4 before the end of turn 2's prompt (341)
    CHECK(r.prefilled_tokens == static_cast<int64_t>(turn3.size()) - 337);
    std::vector<float> got3 = Copy(s->logits());
    std::vector<float> full2 = FullLogits(m, p, turn2);
    std::vector<float> full3 = FullLogits(m, p, turn3);
    if (invariant) {
      CHECK(SameRows(full2, 316, got2, V));
      CHECK(SameRows(full3, 337, got3, V));
    } else {
      auto close = [&](const std::vector<float>& full, int64_t from,
                       const std::vector<float>& got) {
        float max_abs = 0, max_diff = 0;
        for (size_t i = 0; i < got.size(); ++i) {
          max_abs = std::max(max_abs, std::fabs(full[from * V + i]));
          max_diff = std::max(max_diff, std::fabs(full[from * V + i] - got[i]));
        }
        INFO("max |diff| " << max_diff << " of max |logit| " << max_abs);
        CHECK(max_diff <= 0.05f * max_abs);
      };
      close(full2, 316, got2);
      close(full3, 337, got3);
    }
  }
}

}  // namespace
}  // namespace qwenrt

namespace qwenrt {
namespace {

TEST_CASE("MoE model: extension and divergence equal a full re-prefill (CPU, split-invariant)",
          "[cpu]") {
  auto m = Load(std::string(QWENRT_TEST_DATA) + "/tinymoe-s1-q4km.gguf");
  const int64_t V = m->config().n_vocab;
  SessionParams p;
  p.backend = BackendKind::kCpu;
  p.n_threads = 2;
  p.split_invariant = true;
  auto s = NewSession(m, p);
  std::vector<int32_t> prompt = RandomTokens(150, 41);
  REQUIRE(s->Feed(prompt, {}, nullptr).ok());
  std::vector<int32_t> reply;
  REQUIRE(s->Generate(Greedy(10), &reply, nullptr).ok());
  FeedOptions o;
  o.all_logits = true;
  FeedReport r;
  std::vector<int32_t> turn2 = Concat(Concat(prompt, reply), RandomTokens(20, 42));
  REQUIRE(s->Feed(turn2, o, &r).ok());
  CHECK(r.reused_tokens == 160);
  CHECK(SameRows(FullLogits(m, p, turn2), 160, s->logits(), V));
  std::vector<int32_t> turn3 = Concat(Prefix(turn2, 178), RandomTokens(30, 43));
  REQUIRE(s->Feed(turn3, o, &r).ok());
  CHECK(r.checkpoint_pos == 176);
  CHECK(SameRows(FullLogits(m, p, turn3), 176, s->logits(), V));
}

}  // namespace
}  // namespace qwenrt

// Paged KV cache (docs/kv-cache.md): the attention op over page views (cpu vs ref, every storage
// type, page boundaries), page sharing and copy-on-write in KvCache, f16 storage bit-identical to
// f32 on the CPU path, q8_0's bounded error, forks sharing a prefix (COW divergence, truncation
// into a shared page, save/load, threads), the memory 16 sessions sharing a 2,000-token prompt
// hold, and the KV storage type in session files (old files, hostile files).
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <thread>
#include <vector>

#include "kv_pages_test_util.h"
#include "model_test_util.h"
#include "ops/attention.h"
#include "ops/quant.h"
#include "session/session_file.h"
#include "session_test_util.h"

namespace qwenrt::test {
namespace {

bool Same(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST_CASE("paged attention: cpu == ref for every storage type, odd sizes and page boundaries",
          "[cpu]") {
  ThreadPool pool(3);
  for (int64_t Dh : {32, 40}) {
    for (KvType type : {KvType::kF32, KvType::kF16, KvType::kQ8_0}) {
      if (!KvTypeFits(type, Dh)) continue;
      for (int64_t P : {1, 7, 64}) {
        for (int64_t T : {1, 9}) {
          for (int64_t n_past : {0, 5, 130}) {
            const AttentionShape s{T, n_past, 6, 2, Dh};
            const int64_t n = n_past + T, row = s.Hkv * Dh;
            const auto q = Gauss(T * s.H * Dh, 1), k = Gauss(n * row, 2), v = Gauss(n * row, 3);
            const Paged paged(type, k, v, n, row, P);
            std::vector<float> o_ref(q.size()), o_cpu(q.size()), sc(n),
                sc_cpu(cpu::AttentionScratchFloats(n, s.H / s.Hkv, Dh, pool.size()));
            ref::Attention(s, q.data(), paged.K(), paged.V(), o_ref.data(), sc.data());
            cpu::Attention(s, q.data(), paged.K(), paged.V(), o_cpu.data(), sc_cpu.data(), pool);
            INFO(KvTypeName(type) << " Dh " << Dh << " page " << P << " T " << T << " n_past "
                                  << n_past);
            CHECK(MaxAbs(o_ref, o_cpu) <= 1e-5);
            // The same values stored contiguously as f32 give the same bits (f32 is read in place,
            // f16 / q8_0 are widened into a row and then go through the same arithmetic).
            std::vector<float> kw(k.size()), vw(v.size());
            for (int64_t j = 0; j < n; ++j) {
              cpu::KvDecode(type, paged.K().Row(j), 0, row, kw.data() + j * row);
              cpu::KvDecode(type, paged.V().Row(j), 0, row, vw.data() + j * row);
            }
            std::vector<float> c_ref(q.size()), c_cpu(q.size());
            ref::Attention(s, q.data(), kw.data(), vw.data(), c_ref.data(), sc.data());
            cpu::Attention(s, q.data(), kw.data(), vw.data(), c_cpu.data(), sc_cpu.data(), pool);
            CHECK(Same(o_ref, c_ref));
            CHECK(Same(o_cpu, c_cpu));
            if (type == KvType::kF32) CHECK(Same(kw, k));
          }
        }
      }
    }
  }
}

TEST_CASE("KV storage: f16 round trip is exact on f16 values, q8_0 error is bounded", "[cpu]") {
  const int64_t row = 64, n = 10;
  auto x = Gauss(n * row, 5);
  std::vector<uint8_t> h(static_cast<size_t>(n * KvRowBytes(KvType::kF16, row)));
  std::vector<float> back(x.size());
  cpu::KvEncodeRows(KvType::kF16, x.data(), n, row, h.data());
  for (int64_t j = 0; j < n; ++j)
    cpu::KvDecode(KvType::kF16, h.data() + j * KvRowBytes(KvType::kF16, row), 0, row,
                  back.data() + j * row);
  for (size_t i = 0; i < x.size(); ++i) {
    REQUIRE(back[i] == Fp16ToFp32(Fp32ToFp16(x[i])));
    CHECK(KvElement(KvType::kF16, h.data(), static_cast<int64_t>(i)) == back[i]);
  }
  std::vector<uint8_t> q(static_cast<size_t>(n * KvRowBytes(KvType::kQ8_0, row)));
  cpu::KvEncodeRows(KvType::kQ8_0, x.data(), n, row, q.data());
  double worst = 0;
  for (int64_t j = 0; j < n; ++j) {
    cpu::KvDecode(KvType::kQ8_0, q.data() + j * KvRowBytes(KvType::kQ8_0, row), 0, row,
                  back.data() + j * row);
    // |error| <= half a step of d = amax / 127, plus 127 times fp16(d)'s rounding (<= d * 2^-11):
    // 0.5625 d.
    for (int64_t b = 0; b < row; b += kQK8_0) {
      float amax = 0;
      for (int64_t i = 0; i < kQK8_0; ++i) amax = std::max(amax, std::abs(x[j * row + b + i]));
      for (int64_t i = 0; i < kQK8_0; ++i) {
        const double e = std::abs(double(back[j * row + b + i]) - x[j * row + b + i]);
        CHECK(e <= amax / 127.0 * 0.5625 + 1e-6);
        worst = std::max(worst, e);
      }
    }
  }
  CHECK(worst > 0);  // it is lossy
  CHECK(KvElement(KvType::kQ8_0, q.data(), 37) == back[37]);
}

TEST_CASE(
    "KvCache: Copy shares pages, writes copy only the shared page they touch, Truncate drops "
    "shared pages",
    "[ref]") {
  auto model = LoadFixture("micro-s1-f32");
  const ModelConfig& c = model->config();
  KvCacheOptions o;
  o.type = KvType::kF16;
  o.page_rows = 64;
  KvCache parent = KvCache::Create(c, 1000, 0, o).value();
  const int64_t A = parent.n_layers(), row = parent.row_floats();
  REQUIRE(A >= 1);
  const size_t page = parent.page_bytes() * static_cast<size_t>(A);  // one page index, all layers
  auto write = [&](KvCache& kv, int64_t from, int64_t n, uint32_t seed) {
    REQUIRE(kv.Reserve(from + n).ok());
    for (int64_t a = 0; a < A; ++a) {
      const auto k = Gauss(n * row, seed + 2 * a), v = Gauss(n * row, seed + 2 * a + 1);
      kv.WriteRows(a, from, n, k.data(), v.data());
    }
    kv.Commit(from + n);
  };
  auto rows = [&](const KvCache& kv, int64_t n) {
    std::vector<float> out(static_cast<size_t>(2 * A * n * row));
    for (int64_t a = 0; a < A; ++a)
      kv.ReadRows(a, 0, n, out.data() + 2 * a * n * row, out.data() + (2 * a + 1) * n * row);
    return out;
  };
  write(parent, 0, 300, 10);  // pages 0..4, page 4 partial (256..299)
  CHECK(parent.capacity() == 320);
  const auto before = rows(parent, 300);
  const uint64_t parent_lineage = parent.lineage();

  {
    KvCache child = parent.Copy().value();
    CHECK(child.size() == 300);
    CHECK(child.lineage() != parent_lineage);
    CHECK(parent.unique_bytes() == 0);
    CHECK(parent.shared_bytes() == 5 * page);
    CHECK(child.bytes() == 5 * page);
    CHECK(child.prorated_bytes() == 5 * page / 2);
    CHECK(rows(child, 300) == before);

    // The child appends: only page 4 is copied; the parent's rows stay as they were.
    const uint64_t child_lineage = child.lineage();
    REQUIRE(child.Reserve(310).ok());
    CHECK(child.lineage() == child_lineage);  // a private copy of the same contents
    CHECK(child.unique_bytes() == page);
    CHECK(parent.unique_bytes() == page);  // page 4 is the parent's alone again
    write(child, 300, 10, 20);
    CHECK(child.lineage() != child_lineage);
    CHECK(rows(parent, 300) == before);
    CHECK(Same(std::vector<float>(rows(child, 300)), before));

    // The parent appends into its page 4 in place (held alone now), the child's rows stay.
    const auto child_rows = rows(child, 310);
    write(parent, 300, 20, 30);
    CHECK(parent.bytes() == 5 * page);
    CHECK(rows(child, 310) == child_rows);

    // Truncate into a shared page: page 2 stays (shared), page 3 (shared) is dropped, page 4 (the
    // child's own) is kept for reuse; writing from 150 copies page 2 and allocates page 3.
    child.Truncate(150);
    CHECK(child.size() == 150);
    CHECK(child.capacity() == 192);
    CHECK(child.bytes() == 4 * page);
    write(child, 150, 100, 40);
    CHECK(child.capacity() == 320);
    CHECK(child.unique_bytes() == 3 * page);  // pages 2, 3, 4
    const auto p_now = rows(parent, 300);
    CHECK(Same(p_now, before));
    const auto c_now = rows(child, 150);
    std::vector<float> p150 = rows(parent, 150);
    CHECK(Same(c_now, p150));
  }
  // The child is gone: every page is the parent's alone.
  CHECK(parent.unique_bytes() == parent.bytes());
  CHECK(parent.lineage() != parent_lineage);  // the parent wrote rows 300..319
}

// One prefill of `tokens` from position 0 in pieces, all logits (model_test_util.h's Runner).
std::vector<float> RunWith(std::shared_ptr<const Model> m, BackendKind kind, KvType type,
                           int64_t page_rows, const std::vector<int32_t>& tokens,
                           std::vector<int64_t> pieces = {}) {
  KvCacheOptions o;
  o.type = type;
  o.page_rows = page_rows;
  BackendOptions b;
  b.gdn_chunk_min_tokens = INT64_MAX;  // split-invariant: pieces give the same bits
  Runner r(std::move(m), kind, 64, b, o);
  return r.Run(tokens, std::move(pieces));
}

TEST_CASE(
    "CPU path: f16 KV storage gives exactly the f32-storage logits (all fixtures, pages, pieces)",
    "[cpu]") {
  const auto seq = ReadTokens("tokens/seqA.txt");
  for (const char* name : {"micro-s1-f32", "tiny-s1-q4km", "tinymoe-s1-q4km"}) {
    auto m = LoadFixture(name);
    INFO(name);
    const auto f32 = RunWith(m, BackendKind::kCpu, KvType::kF32, 256, seq);
    CHECK(Same(RunWith(m, BackendKind::kCpu, KvType::kF16, 256, seq), f32));
    CHECK(Same(RunWith(m, BackendKind::kCpu, KvType::kF16, 7, seq, {3, 5, 17}), f32));
    CHECK(Same(RunWith(m, BackendKind::kCpu, KvType::kF16, 1, seq, {1}), f32));
  }
  // The golden bound of the CPU path (model_golden_test) holds with the default f16 storage too.
  auto tiny = LoadFixture("tiny-s1-q4km");
  const int64_t V = tiny->config().n_vocab;
  const auto exact = ReadF32("logits/tiny-s1-q4km.seqA.exact.f32");
  const auto peer = ReadF32("logits/tiny-s1-q4km.seqA.peer.f32");
  const Distance d = Compare(RunWith(tiny, BackendKind::kCpu, KvType::kF16, 256, seq), exact, V);
  const Distance pd = Compare(peer, exact, V);
  CHECK(d.mean_over_std <= 1.25 * pd.mean_over_std);
  CHECK(d.top1 >= pd.top1);
}

TEST_CASE("q8_0 KV storage: bounded error against f16, and prefill == decode exactly", "[cpu]") {
  const auto seq = ReadTokens("tokens/seqA.txt");
  for (const char* name : {"micro-s1-f32", "tiny-s1-q4km"}) {
    auto m = LoadFixture(name);
    const int64_t V = m->config().n_vocab;
    const auto f16 = RunWith(m, BackendKind::kCpu, KvType::kF16, 256, seq);
    const auto q8 = RunWith(m, BackendKind::kCpu, KvType::kQ8_0, 256, seq);
    const Distance d = Compare(q8, f16, V);
    INFO(name << ": q8_0 vs f16 mean|d|/std " << d.mean_over_std << " max rel " << d.max_rel
              << " top-1 " << d.top1);
    WARN(name << ": q8_0 vs f16 KV: mean|d|/std " << d.mean_over_std << ", max|d|/max " << d.max_rel
              << ", top-1 " << d.top1);
    CHECK(!Same(q8, f16));           // lossy, so the test can tell
    CHECK(d.mean_over_std <= 0.04);  // measured: micro 0.0003, tiny 0.0196
    CHECK(d.top1 >= 0.95);
    CHECK(Same(RunWith(m, BackendKind::kCpu, KvType::kQ8_0, 7, seq, {1}), q8));
  }
}

// --- sessions sharing a prefix ----------------------------------------------------------------

std::shared_ptr<const Model> Tiny() {
  static std::shared_ptr<const Model> m = LoadFixture("tiny-s1-q4km");
  return m;
}

SessionParams CpuParams() {
  SessionParams p = TestParams(BackendKind::kCpu);
  p.kv_page_rows = 256;
  return p;
}

std::vector<int32_t> Concat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// All logits of `tokens` fed to a fresh session, and its greedy continuation.
struct Run {
  std::vector<float> logits;
  std::vector<int32_t> generated;
};
Run Fresh(const SessionParams& p, const std::vector<int32_t>& tokens, int64_t gen) {
  auto s = NewSession(Tiny(), p);
  FeedOptions o;
  o.all_logits = true;
  REQUIRE(s->Feed(tokens, o, nullptr).ok());
  Run r{Copy(s->logits()), {}};
  GenerateOptions g;
  g.max_tokens = gen;
  g.sampler = [](const float* x, int64_t n) { return Argmax(x, n); };
  REQUIRE(s->Generate(g, &r.generated, nullptr).ok());
  return r;
}

// Feeds `tokens` (all logits) and generates into *r; no Catch2 assertion (Catch2 is not
// thread-safe, so worker threads call this and the main thread checks the status).
Status TryContinue(Session& s, const std::vector<int32_t>& tokens, int64_t gen, FeedReport* report,
                   Run* r) {
  FeedOptions o;
  o.all_logits = true;
  QWENRT_RETURN_IF_ERROR(s.Feed(tokens, o, report));
  r->logits = Copy(s.logits());
  GenerateOptions g;
  g.max_tokens = gen;
  g.sampler = [](const float* x, int64_t n) { return Argmax(x, n); };
  return s.Generate(g, &r->generated, nullptr);
}

// Feeds `tokens` (all logits) and generates; the rows for positions [from, N) of a fresh run.
Run Continue(Session& s, const std::vector<int32_t>& tokens, int64_t gen,
             FeedReport* report = nullptr) {
  Run r;
  const Status st = TryContinue(s, tokens, gen, report, &r);
  INFO(st.ToString());
  REQUIRE(st.ok());
  return r;
}

std::vector<float> Rows(const std::vector<float>& all, int64_t from, int64_t V) {
  return std::vector<float>(all.begin() + from * V, all.end());
}

TEST_CASE("Fork shares the KV; divergence copies one page and leaves the parent bit-identical",
          "[cpu]") {
  const SessionParams p = CpuParams();
  const int64_t V = Tiny()->config().n_vocab;
  const auto prompt = RandomTokens(700, 1);  // pages 0..2, page 2 partial
  auto parent = NewSession(Tiny(), p);
  REQUIRE(parent->kv_type() == KvType::kF16);  // the CPU default
  REQUIRE(parent->Feed(prompt, {}, nullptr).ok());
  auto fork = parent->Fork().value();
  const size_t page = fork->kv_bytes() / 3;  // all layers of one page index
  CHECK(fork->kv_bytes() == 3 * page);
  CHECK(fork->kv_unique_bytes() == 0);
  CHECK(fork->kv_shared_bytes() == 3 * page);
  CHECK(fork->checkpoint_unique_bytes() == 0);  // the snapshots are shared, not copied
  CHECK(fork->checkpoint_bytes() == parent->checkpoint_bytes());

  const auto x = Concat(prompt, RandomTokens(20, 2)), y = Concat(prompt, RandomTokens(30, 3));
  FeedReport r;
  const Run fx = Continue(*fork, x, 5, &r);
  CHECK(r.reused_tokens == 700);
  CHECK(fork->kv_unique_bytes() == page);  // page 2, copied on write
  const Run px = Continue(*parent, y, 5);
  const Run want_x = Fresh(p, x, 5), want_y = Fresh(p, y, 5);
  CHECK(Same(fx.logits, Rows(want_x.logits, 700, V)));
  CHECK(fx.generated == want_x.generated);
  CHECK(Same(px.logits, Rows(want_y.logits, 700, V)));
  CHECK(px.generated == want_y.generated);
}

TEST_CASE(
    "Forks on threads: shared-prefix sessions equal unshared ones; truncation into a shared page",
    "[cpu]") {
  SessionParams p = CpuParams();
  p.checkpoint_every = 100;
  p.checkpoint_budget_bytes = int64_t{1} << 30;  // keep every snapshot
  const int64_t V = Tiny()->config().n_vocab;
  const auto prompt = RandomTokens(700, 4);
  auto parent = NewSession(Tiny(), p);
  REQUIRE(parent->Feed(prompt, {}, nullptr).ok());
  constexpr int kForks = 4;
  std::vector<std::unique_ptr<Session>> forks;
  std::vector<std::vector<int32_t>> inputs;
  for (int i = 0; i < kForks; ++i) {
    forks.push_back(parent->Fork().value());
    // Forks 0, 1 extend the prompt; 2, 3 diverge at 600 and 530: the KV is cut back to the shared
    // checkpoint at 600 / 500, inside the shared pages 2 [512, 768) / 1 [256, 512), and the
    // recurrent state restored from that (shared) snapshot.
    const int64_t keep = i < 2 ? 700 : i == 2 ? 600 : 530;
    inputs.push_back(Concat(std::vector<int32_t>(prompt.begin(), prompt.begin() + keep),
                            RandomTokens(40, 10 + i)));
  }
  std::vector<Run> got(kForks);
  std::vector<FeedReport> reports(kForks);
  std::vector<Status> statuses(kForks);
  {
    std::vector<std::thread> threads;
    for (int i = 0; i < kForks; ++i)
      threads.emplace_back(
          [&, i] { statuses[i] = TryContinue(*forks[i], inputs[i], 6, &reports[i], &got[i]); });
    for (auto& t : threads) t.join();
  }
  for (const Status& st : statuses) REQUIRE(st.ok());
  CHECK(reports[2].checkpoint_pos == 600);
  CHECK(reports[3].checkpoint_pos == 500);
  for (int i = 0; i < kForks; ++i) {
    INFO("fork " << i);
    const Run want = Fresh(p, inputs[i], 6);
    CHECK(Same(got[i].logits, Rows(want.logits, reports[i].reused_tokens, V)));
    CHECK(got[i].generated == want.generated);
  }
  // The parent was never written by its forks.
  const auto more = Concat(prompt, RandomTokens(10, 20));
  const Run pm = Continue(*parent, more, 3);
  const Run want = Fresh(p, more, 3);
  CHECK(Same(pm.logits, Rows(want.logits, 700, V)));
  CHECK(pm.generated == want.generated);
}

TEST_CASE("A session that shares pages saves and loads (unshared) and continues bit-identically",
          "[cpu]") {
  const SessionParams p = CpuParams();
  const int64_t V = Tiny()->config().n_vocab;
  const auto prompt = RandomTokens(600, 5);
  auto parent = NewSession(Tiny(), p);
  REQUIRE(parent->Feed(prompt, {}, nullptr).ok());
  auto fork = parent->Fork().value();
  const auto x = Concat(prompt, RandomTokens(9, 6));
  REQUIRE(fork->Feed(x, {}, nullptr).ok());
  REQUIRE(fork->kv_shared_bytes() > 0);
  const std::vector<uint8_t> bytes = fork->SaveToMemory().value();
  auto loaded = NewSession(Tiny(), p);
  REQUIRE(loaded->LoadFromMemory(bytes).ok());
  CHECK(loaded->kv_shared_bytes() == 0);
  CHECK(loaded->checkpoint_unique_bytes() == loaded->checkpoint_bytes());
  CHECK(loaded->transcript() == fork->transcript());
  const auto y = Concat(x, RandomTokens(12, 7));
  const Run a = Continue(*loaded, y, 4), b = Continue(*fork, y, 4), want = Fresh(p, y, 4);
  CHECK(Same(a.logits, b.logits));
  CHECK(Same(a.logits, Rows(want.logits, 609, V)));
  CHECK(a.generated == want.generated);
}

TEST_CASE(
    "16 sessions sharing a 2,000-token prompt hold less than 2x one session plus what each adds",
    "[cpu]") {
  const SessionParams p = CpuParams();
  const auto prompt = RandomTokens(2000, 8);
  constexpr int kSessions = 16;
  const int64_t own = 16, gen = 8;
  // One session alone: the prompt, its own 16 tokens, 8 generated.
  auto one = NewSession(Tiny(), p);
  REQUIRE(one->Feed(Concat(prompt, RandomTokens(own, 100)), {}, nullptr).ok());
  (void)Continue(*one, one->transcript(), gen);
  const size_t one_bytes = one->kv_bytes() + one->state_bytes() + one->checkpoint_bytes();

  auto parent = NewSession(Tiny(), p);
  REQUIRE(parent->Feed(prompt, {}, nullptr).ok());  // the prompt is prefilled once
  std::vector<std::unique_ptr<Session>> s;
  for (int i = 0; i < kSessions; ++i) s.push_back(parent->Fork().value());
  parent.reset();  // only the 16 hold the prompt now
  for (int i = 0; i < kSessions; ++i) {
    FeedReport r;
    Continue(*s[i], Concat(prompt, RandomTokens(own, 101 + i)), gen, &r);
    CHECK(r.reused_tokens == 2000);
    CHECK(r.prefilled_tokens == own);
  }
  size_t held = 0, adds = 0, kv_held = 0, kv_adds = 0;
  for (const auto& x : s) {
    held += x->kv_prorated_bytes() + x->state_bytes() + x->checkpoint_prorated_bytes();
    adds += x->kv_unique_bytes() + x->state_bytes() + x->checkpoint_unique_bytes();
    kv_held += x->kv_prorated_bytes();
    kv_adds += x->kv_unique_bytes();
  }
  WARN("16 sessions sharing a 2000-token prompt hold "
       << held << " bytes (KV " << kv_held << "); one session alone " << one_bytes << " (KV "
       << one->kv_bytes() << "); what the 16 add " << adds << " (KV " << kv_adds
       << "); 16 unshared " << kSessions * one_bytes);
  CHECK(kv_held <= one->kv_bytes() + kv_adds);
  CHECK(held < 2 * one_bytes + adds);
  CHECK(held <= one_bytes + adds);  // stronger: the shared prompt is held once
}

// --- session files -----------------------------------------------------------------------------

using Sections = std::vector<std::pair<uint32_t, std::vector<uint8_t>>>;

Sections Parse(const std::vector<uint8_t>& file) {
  auto parsed = ParseSessionFile(file, Tiny()->fingerprint());
  REQUIRE(parsed.ok());
  Sections out;
  for (const auto& s : parsed->sections)
    out.emplace_back(s.tag, std::vector<uint8_t>(s.payload.begin(), s.payload.end()));
  return out;
}

std::vector<uint8_t> Build(const Sections& sections) {
  std::vector<uint8_t> out;
  VectorSink sink(&out);
  SessionWriter w(&sink, Tiny()->fingerprint());
  for (const auto& [tag, payload] : sections) {
    w.BeginSection(tag, payload.size());
    w.PutBytes(payload.data(), payload.size());
    w.EndSection();
  }
  REQUIRE(w.Finish().ok());
  return out;
}

const std::vector<uint8_t>* Find(const Sections& s, const char (&tag)[5]) {
  for (const auto& [t, payload] : s)
    if (t == SectionTag(tag)) return &payload;
  return nullptr;
}

TEST_CASE("Session files record the KV storage type; old f32 files load; unknown types are refused",
          "[cpu]") {
  const auto prompt = RandomTokens(300, 9), more = RandomTokens(10, 10);
  const int64_t V = Tiny()->config().n_vocab;
  SessionParams p32 = CpuParams();
  p32.kv_type = KvType::kF32;
  auto s32 = NewSession(Tiny(), p32);
  REQUIRE(s32->Feed(prompt, {}, nullptr).ok());
  const std::vector<uint8_t> file32 = s32->SaveToMemory().value();
  const Sections sec32 = Parse(file32);
  REQUIRE(Find(sec32, "KVTY") != nullptr);
  uint32_t t = 99;
  std::memcpy(&t, Find(sec32, "KVTY")->data(), 4);
  CHECK(t == static_cast<uint32_t>(KvType::kF32));

  const SessionParams p16 = CpuParams();  // f16, the default
  auto s16 = NewSession(Tiny(), p16);
  REQUIRE(s16->Feed(prompt, {}, nullptr).ok());
  const Sections sec16 = Parse(s16->SaveToMemory().value());
  std::memcpy(&t, Find(sec16, "KVTY")->data(), 4);
  CHECK(t == static_cast<uint32_t>(KvType::kF16));
  CHECK(Find(sec16, "KVCA")->size() * 2 ==
        Find(sec32, "KVCA")->size());  // f16 rows: half the bytes

  const auto all = Concat(prompt, more);
  const Run want = Fresh(p16, all, 4);
  SECTION("a file written before KVTY (f32 rows) loads into an f16 session and continues exactly") {
    Sections old = sec32;
    std::erase_if(old, [](const auto& s) { return s.first == SectionTag("KVTY"); });
    auto s = NewSession(Tiny(), p16);
    REQUIRE(s->LoadFromMemory(Build(old)).ok());
    CHECK(s->kv_type() == KvType::kF16);
    const Run got = Continue(*s, all, 4);
    CHECK(Same(got.logits, Rows(want.logits, 300, V)));
    CHECK(got.generated == want.generated);
  }
  SECTION("a q8_0 file loads into a q8_0 session bit for bit") {
    SessionParams p8 = CpuParams();
    p8.kv_type = KvType::kQ8_0;
    auto a = NewSession(Tiny(), p8);
    REQUIRE(a->Feed(prompt, {}, nullptr).ok());
    auto b = NewSession(Tiny(), p8);
    REQUIRE(b->LoadFromMemory(a->SaveToMemory().value()).ok());
    CHECK(Same(Continue(*a, all, 3).logits, Continue(*b, all, 3).logits));
  }
  SECTION("hostile KVTY sections") {
    auto check = [&](Sections edited, StatusCode code) {
      auto s = NewSession(Tiny(), p16);
      REQUIRE(s->Feed(more, {}, nullptr).ok());
      const Status st = s->LoadFromMemory(Build(edited));
      INFO(st.ToString());
      CHECK(st.code() == code);
      CHECK(s->transcript() == more);  // unchanged
    };
    Sections unknown = sec16;
    for (auto& [tag, payload] : unknown)
      if (tag == SectionTag("KVTY")) payload = {7, 0, 0, 0};
    check(unknown, StatusCode::kUnsupported);
    Sections short_payload = sec16;
    for (auto& [tag, payload] : short_payload)
      if (tag == SectionTag("KVTY")) payload.resize(2);
    check(short_payload, StatusCode::kBadFormat);
    Sections f16_with_f32_rows = sec32;
    for (auto& [tag, payload] : f16_with_f32_rows)
      if (tag == SectionTag("KVTY")) payload = {1, 0, 0, 0};
    check(f16_with_f32_rows, StatusCode::kBadFormat);
    Sections twice = sec16;
    twice.insert(twice.begin() + 1, *std::find_if(sec16.begin(), sec16.end(), [](const auto& s) {
                   return s.first == SectionTag("KVTY");
                 }));
    check(twice, StatusCode::kBadFormat);
    Sections after = sec16;  // KVTY after KVCA: the rows' type would be unknown when they are read
    auto it = std::find_if(after.begin(), after.end(),
                           [](const auto& s) { return s.first == SectionTag("KVTY"); });
    auto kvty = *it;
    after.erase(it);
    after.insert(std::find_if(after.begin(), after.end(),
                              [](const auto& s) { return s.first == SectionTag("KVCA"); }) +
                     1,
                 kvty);
    check(after, StatusCode::kBadFormat);
  }
}

TEST_CASE("SetKvType converts what a session holds: f16 -> f32 exactly, f16 -> q8_0 within bounds",
          "[cpu]") {
  const auto prompt = RandomTokens(300, 11), all = Concat(prompt, RandomTokens(10, 12));
  const int64_t V = Tiny()->config().n_vocab;
  auto s = NewSession(Tiny(), CpuParams());
  REQUIRE(s->Feed(prompt, {}, nullptr).ok());
  auto fork = s->Fork().value();
  REQUIRE(s->SetKvType(KvType::kF32).ok());
  CHECK(s->kv_type() == KvType::kF32);
  CHECK(s->kv_shared_bytes() == 0);  // the converted cache is its own
  CHECK(fork->kv_unique_bytes() == fork->kv_bytes());
  const Run want = Fresh(CpuParams(), all, 3);
  const Run got = Continue(*s, all, 3);
  CHECK(Same(got.logits, Rows(want.logits, 300, V)));
  CHECK(got.generated == want.generated);

  // To q8_0: lossy, a bounded distance from the f16 continuation (a q8_0 session from scratch
  // differs too: its prefix was computed over q8_0 keys).
  REQUIRE(fork->SetKvType(KvType::kQ8_0).ok());
  const std::vector<float> q8 = Continue(*fork, all, 3).logits, f16 = Rows(want.logits, 300, V);
  CHECK(!Same(q8, f16));
  CHECK(Compare(q8, f16, V).mean_over_std <= 0.04);
  CHECK(fork->SetKvType(static_cast<KvType>(5)).code() == StatusCode::kInvalidArgument);
  CHECK(fork->kv_type() == KvType::kQ8_0);
}

TEST_CASE("KV storage types the backend or model cannot honour are refused at creation", "[ref]") {
  auto micro = LoadFixture("micro-s1-f32");  // head_dim 32: q8_0 fits
  SessionParams p = TestParams(BackendKind::kRef);
  CHECK(NewSession(micro, p)->kv_type() == KvType::kF32);  // ref default: f32
  p.kv_type = KvType::kQ8_0;
  CHECK(Session::Create(micro, p).ok());
  p.kv_type = static_cast<KvType>(9);
  CHECK(Session::Create(micro, p).status().code() == StatusCode::kInvalidArgument);
  p.kv_type = KvType::kF16;
  p.backend = BackendKind::kCuda;
  CHECK(Session::Create(micro, p).status().code() == StatusCode::kUnsupported);
  p.kv_page_rows = 0;
  p.backend = BackendKind::kCpu;
  CHECK(Session::Create(micro, p).status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("KvCache: BytesFor is what Reserve allocates; max_bytes refuses growth first", "[ref]") {
  auto model = LoadFixture("micro-s1-f32");
  const ModelConfig& c = model->config();
  KvCacheOptions o;
  o.type = KvType::kF16;
  o.page_rows = 32;
  for (int64_t n : {1, 32, 33, 100}) {
    KvCache kv = KvCache::Create(c, 1000, 0, o).value();
    REQUIRE(kv.Reserve(n).ok());
    CHECK(kv.bytes() == KvCache::BytesFor(c, n, o));
  }
  o.max_bytes = KvCache::BytesFor(c, 64, o);  // two pages
  KvCache kv = KvCache::Create(c, 1000, 64, o).value();
  CHECK(kv.Reserve(64).ok());
  const int64_t capacity = kv.capacity();
  const size_t bytes = kv.bytes();
  CHECK(kv.Reserve(65).code() == StatusCode::kOutOfMemory);
  CHECK(kv.capacity() == capacity);
  CHECK(kv.bytes() == bytes);
  // A fork keeps the limit: its pages are shared, but they are pages it holds.
  KvCache fork = kv.Copy().value();
  CHECK(fork.max_bytes() == o.max_bytes);
  CHECK(fork.Reserve(65).code() == StatusCode::kOutOfMemory);
  o.max_bytes = KvCache::BytesFor(c, 64, o) - 1;
  CHECK(KvCache::Create(c, 1000, 64, o).status().code() == StatusCode::kOutOfMemory);
}

}  // namespace
}  // namespace qwenrt::test

// Invariants of the forward pass on each path: how a sequence is split into ubatches does not
// change the logits; errors leave the KV cache and recurrent state untouched; the cache grows and
// truncates without losing contents.
//
// Tolerances. Reference path: every op works row by row in a fixed order (matmul rows, norms, the
// token-serial delta rule, attention per query), so any split gives bit-identical results
// (measured: 0); we allow 1e-6·max|logit| as slack for the compiler. CPU path with the recurrent
// delta rule (gdn_chunk_min_tokens = ∞): also row-independent (per-row Q8_K activation
// quantization, per-query attention), so the same bound holds (measured: 0). CPU path with the
// default chunked delta rule for ubatches >= cpu::kGatedDeltaChunkMinTokens: the chunk form
// reassociates the sums of the recurrence (docs/spec/qwen35-architecture.md §10), so different
// splits differ by f32 rounding: 4e-6·max|logit| on the f32 model (bound: 1e-4). On the Q4_K_M
// models the Q8_K activation quantization amplifies any such perturbation (an activation that
// crosses a rounding boundary moves by a full quantization step): measured max|Δ|
// 1–2e-2·max|logit|, mean|Δ|/std 5–7e-3, which is the same effect as chunked-vs-recurrent on one
// split (1.5e-2 mean/std) and well below the quantization noise of either form against exact math
// (5e-2). Bound there: max 0.1, mean/std 0.02, top-1 >= 0.95.
#include <catch2/catch.hpp>
#include <thread>

#include "model_test_util.h"

namespace qwenrt::test {
namespace {

double MaxRel(const std::vector<float>& a, const std::vector<float>& b) {
  double mx = 0, md = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    mx = std::max(mx, std::abs(double(b[i])));
    md = std::max(md, std::abs(double(a[i]) - b[i]));
  }
  return md / mx;
}

struct PathCase {
  BackendKind kind;
  int64_t chunk_min;
  double tol;
  const char* name;
};

const PathCase kPaths[] = {
    // not constexpr: reads the default threshold
    {BackendKind::kRef, 64, 1e-6, "ref"},
    {BackendKind::kCpu, INT64_MAX, 1e-6, "cpu recurrent"},
    {BackendKind::kCpu, BackendOptions().gdn_chunk_min_tokens, 1e-4, "cpu chunked"},
};

TEST_CASE("prefill at once == one token at a time == uneven ubatches", "[ref][cpu]") {
  for (const char* m : {"micro-s1-f32", "tiny-s1-q4km", "tinymoe-s1-q4km"}) {
    auto model = LoadFixture(m);
    for (const PathCase& p : kPaths) {
      INFO(m << " " << p.name);
      BackendOptions bo;
      bo.gdn_chunk_min_tokens = p.chunk_min;
      Runner r(model, p.kind, 512, bo);
      const auto seq_b = ReadTokens("tokens/seqB.txt");
      const auto at_once_b = r.Run(seq_b);
      r.Reset();
      const auto one_by_one = r.Run(seq_b, {1});
      // Chunked form on a quantized model: see the tolerance note at the top.
      const bool loose =
          p.chunk_min < INT64_MAX && std::string(m).find("q4km") != std::string::npos;
      auto check_close = [&](const std::vector<float>& got, const std::vector<float>& want,
                             const char* what) {
        const double d = MaxRel(got, want);
        const Distance dd = Compare(got, want, model->config().n_vocab);
        WARN(m << " " << p.name << ": " << what << " max|d|/max = " << d
               << " mean|d|/std = " << dd.mean_over_std << " top-1 = " << dd.top1);
        if (loose) {
          CHECK(d <= 0.1);
          CHECK(dd.mean_over_std <= 0.02);
          CHECK(dd.top1 >= 0.95);
        } else {
          CHECK(d <= p.tol);
        }
      };
      check_close(one_by_one, at_once_b, "one-by-one vs at-once");

      auto seq_a = ReadTokens("tokens/seqA.txt");
      seq_a.resize(150);  // 7 + 64 + 1 + 78: the last piece is long enough for the chunked form
      r.Reset();
      const auto at_once_a = r.Run(seq_a);
      r.Reset();
      const auto uneven = r.Run(seq_a, {7, 64, 1, 1000});
      check_close(uneven, at_once_a, "ubatches 7,64,1,rest vs at-once");

      // A context with a small max_ubatch splits internally; same results.
      if (p.chunk_min == INT64_MAX || p.kind == BackendKind::kRef) {
        Runner small(model, p.kind, 50, bo);
        CHECK(MaxRel(small.Run(seq_a), at_once_a) <= p.tol);
      }
    }
  }
}

TEST_CASE("errors leave the state unchanged", "[ref][cpu]") {
  auto model = LoadFixture("tinymoe-s1-q4km");
  const int64_t V = model->config().n_vocab;
  for (BackendKind kind : {BackendKind::kRef, BackendKind::kCpu}) {
    INFO(BackendName(kind));
    Runner r(model, kind);
    const auto seq = ReadTokens("tokens/seqB.txt");
    const std::vector<int32_t> head(seq.begin(), seq.begin() + 20),
        tail(seq.begin() + 20, seq.end());
    // The same split (20, rest) without the errors: the CPU default runs the chunked delta rule,
    // whose result depends on the split, and on this MoE fixture a last-bit change can flip an
    // expert choice.
    const auto expect = r.Run(seq, {20, static_cast<int64_t>(seq.size())});
    r.Reset();
    r.Run(head);
    const RecurrentState before = r.rec->Copy().value();
    std::vector<float> logits(V * 4, 0.0f);

    // Invalid token id (in the middle of the batch, after valid ones).
    const std::vector<int32_t> bad = {tail[0], tail[1], static_cast<int32_t>(V), tail[2]};
    Status st = Forward(*r.ctx, *r.kv, *r.rec, bad, true, logits.data());
    CHECK(st.code() == StatusCode::kInvalidArgument);
    CHECK(st.message().find(std::to_string(V)) != std::string::npos);
    const std::vector<int32_t> negative = {-1};
    CHECK(Forward(*r.ctx, *r.kv, *r.rec, negative, false, logits.data()).code() ==
          StatusCode::kInvalidArgument);
    CHECK(Forward(*r.ctx, *r.kv, *r.rec, {}, false, logits.data()).code() ==
          StatusCode::kInvalidArgument);
    CHECK(Forward(*r.ctx, *r.kv, *r.rec, tail, false, nullptr).code() ==
          StatusCode::kInvalidArgument);
    CHECK(r.kv->size() == 20);
    for (int64_t g = 0; g < before.n_layers(); ++g) {
      CHECK(std::equal(before.conv(g), before.conv(g) + before.conv_floats(), r.rec->conv(g)));
      CHECK(std::equal(before.ssm(g), before.ssm(g) + before.ssm_floats(), r.rec->ssm(g)));
    }
    // Continuing after the errors gives the uninterrupted result.
    std::vector<float> rest(tail.size() * V);
    REQUIRE(Forward(*r.ctx, *r.kv, *r.rec, tail, true, rest.data()).ok());
    CHECK(MaxRel(rest, std::vector<float>(expect.begin() + 20 * V, expect.end())) <= 1e-6);

    // A full context: ContextFull, nothing changed.
    auto small_kv = KvCache::Create(model->config(), 10).value();
    auto rec2 = RecurrentState::Create(model->config()).value();
    st = Forward(*r.ctx, small_kv, rec2, seq, false, logits.data());
    CHECK(st.code() == StatusCode::kContextFull);
    CHECK(small_kv.size() == 0);
    CHECK(rec2.ssm(0)[0] == 0.0f);
  }
}

TEST_CASE("KV cache grows, copies and truncates without losing contents", "[ref]") {
  auto model = LoadFixture("micro-s1-f32");
  const int64_t V = model->config().n_vocab;
  Runner r(model, BackendKind::kRef);
  const auto seq = ReadTokens("tokens/seqA.txt");
  const auto expect = r.Run(seq);
  CHECK(r.kv->capacity() >= 300);

  // Start at capacity 0: doublings happen while feeding in small pieces.
  r.Reset();
  CHECK(r.kv->capacity() == 0);
  const auto grown = r.Run(seq, {3, 5, 17});
  CHECK(MaxRel(grown, expect) <= 1e-6);
  CHECK(r.kv->size() == 300);
  CHECK(r.kv->bytes() == 2 * static_cast<size_t>(model->config().n_attn_layers()) *
                             r.kv->capacity() * r.kv->row_floats() * sizeof(float));

  // Snapshot at 100 (KV copy + recurrent copy), continue, then restore and redo: same logits.
  r.Reset();
  const std::vector<int32_t> first(seq.begin(), seq.begin() + 100),
      second(seq.begin() + 100, seq.end());
  r.Run(first);
  KvCache kv_snap = r.kv->Copy().value();
  RecurrentState rec_snap = r.rec->Copy().value();
  CHECK(kv_snap.size() == 100);
  std::vector<float> out1(second.size() * V), out2(second.size() * V);
  REQUIRE(Forward(*r.ctx, *r.kv, *r.rec, second, true, out1.data()).ok());
  REQUIRE(Forward(*r.ctx, kv_snap, rec_snap, second, true, out2.data()).ok());
  CHECK(out1 == out2);

  // Truncate only cuts the attention history; with a restored recurrent state it resumes exactly.
  auto rec_at_100 = RecurrentState::Create(model->config()).value();
  {
    Runner r2(model, BackendKind::kRef);
    r2.Run(first);
    REQUIRE(rec_at_100.CopyFrom(*r2.rec).ok());
  }
  r.kv->Truncate(100);
  CHECK(r.kv->size() == 100);
  REQUIRE(r.rec->CopyFrom(rec_at_100).ok());
  REQUIRE(Forward(*r.ctx, *r.kv, *r.rec, second, true, out2.data()).ok());
  CHECK(out1 == out2);
  r.rec->Reset();
  CHECK(r.rec->ssm(0)[0] == 0.0f);
}

}  // namespace
}  // namespace qwenrt::test

namespace qwenrt::test {
namespace {

// Past the attention's first key span (cpu::kAttentionKeySpan = 1024 positions) decode steps and
// short appends split their keys over the pool and merge the span partials; the row-independent CPU
// path (recurrent delta rule) must still give the bits of one prefill: a 25-token append at depth
// (the next turn of a conversation) and single-token decode.
TEST_CASE("past 1024 positions: append and decode == prefill at once, bit for bit", "[cpu]") {
  auto model = LoadFixture("micro-s1-f32");
  const auto seq_a = ReadTokens("tokens/seqA.txt");
  std::vector<int32_t> tokens;
  while (tokens.size() < 1100) tokens.insert(tokens.end(), seq_a.begin(), seq_a.end());
  tokens.resize(1100);
  BackendOptions bo;
  bo.gdn_chunk_min_tokens = INT64_MAX;
  for (KvType type : {KvType::kF16, KvType::kF32}) {
    INFO(KvTypeName(type));
    Runner r(model, BackendKind::kCpu, 512, bo, KvCacheOptions{type, 256});
    const auto at_once = r.Run(tokens);
    r.Reset();
    CHECK(r.Run(tokens, {1075, 25}) == at_once);
    r.Reset();
    CHECK(r.Run(tokens, {1070, 1}) == at_once);
  }
}

TEST_CASE("one Model shared by two threads gives the single-thread results", "[cpu]") {
  auto model = LoadFixture("tinymoe-s1-q4km");
  const auto seq_a = ReadTokens("tokens/seqA.txt"), seq_b = ReadTokens("tokens/seqB.txt");
  const auto expect_a = Runner(model, BackendKind::kCpu).Run(seq_a);
  const auto expect_b = Runner(model, BackendKind::kCpu).Run(seq_b);
  std::vector<float> got_a, got_b;
  std::thread ta([&] { got_a = Runner(model, BackendKind::kCpu).Run(seq_a); });
  std::thread tb([&] { got_b = Runner(model, BackendKind::kCpu).Run(seq_b); });
  ta.join();
  tb.join();
  CHECK(got_a == expect_a);
  CHECK(got_b == expect_b);
}

}  // namespace
}  // namespace qwenrt::test

namespace qwenrt::test {
namespace {

TEST_CASE("last-token logits equal the last row of all logits, across internal ubatches",
          "[ref][cpu]") {
  auto model = LoadFixture("tiny-s1-q4km");
  const int64_t V = model->config().n_vocab;
  const auto seq = ReadTokens("tokens/seqB.txt");
  for (BackendKind kind : {BackendKind::kRef, BackendKind::kCpu}) {
    Runner all(model, kind, 16);
    const auto logits = all.Run(seq);
    Runner last(model, kind, 16);
    std::vector<float> out(V, -1.0f);
    REQUIRE(Forward(*last.ctx, *last.kv, *last.rec, seq, false, out.data()).ok());
    CHECK(out == std::vector<float>(logits.end() - V, logits.end()));
    CHECK(last.kv->size() == static_cast<int64_t>(seq.size()));
  }
}

}  // namespace
}  // namespace qwenrt::test

// EstimateMemory against what sessions then hold, SessionParams::memory_limit_bytes, and the 4B
// shape's estimate at its trained context (docs/memory.md).
#include "session/memory_estimate.h"

#include <catch2/catch.hpp>
#include <cstdio>
#include <vector>

#include "model/kv_cache.h"
#include "model/recurrent_state.h"
#include "model_test_util.h"
#include "session_test_util.h"

using namespace qwenrt;
using namespace qwenrt::test;

namespace {

std::vector<int32_t> Tokens(int64_t n, int64_t vocab) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) t[i] = static_cast<int32_t>((7 * i + 3) % vocab);
  return t;
}

// What a session holds that the estimate covers: KV pages, state, checkpoints and the spare one,
// and the forward pass's working buffers.
size_t Held(const Session& s) {
  return s.kv_bytes() + s.state_bytes() + s.checkpoint_bytes() + s.spare_checkpoint_bytes() +
         s.working_bytes();
}

}  // namespace

TEST_CASE("EstimateMemory: a session filled to its context holds the estimate, within 5%",
          "[ref]") {
  auto model = LoadFixture("micro-s1-f32");
  const ModelConfig& c = model->config();
  REQUIRE(c.n_attn_layers() > 0);
  REQUIRE(c.n_gdn_layers() > 0);
  for (KvType type : {KvType::kF32, KvType::kF16}) {
    MemoryEstimateParams ep;
    ep.context = 300;  // not a multiple of the page: the last page is allocated whole
    ep.kv_type = type;
    ep.kv_page_rows = 64;
    ep.sessions = 2;
    ep.checkpoint_budget_bytes = static_cast<int64_t>(3 * RecurrentState::BytesFor(c));
    SessionParams p = TestParams(BackendKind::kCpu);
    ep.ubatch = p.ubatch;
    ep.n_threads = p.n_threads;
    const MemoryEstimate e = EstimateMemory(*model, ep).value();
    CHECK(e.weights > 0);
    CHECK(e.total == e.weights + 2 * e.per_session);
    CHECK(e.per_session == e.kv_per_session + e.state_per_session + e.checkpoints_per_session +
                               e.working_per_session);

    p.kv_type = type;
    p.kv_page_rows = ep.kv_page_rows;
    p.max_context = ep.context;
    p.initial_capacity = 64;  // the KV grows page by page as the prompt is fed
    p.checkpoint_budget_bytes = ep.checkpoint_budget_bytes;
    p.checkpoint_every = 16;  // enough checkpoints to fill the budget and leave a spare
    auto a = NewSession(model, p), b = NewSession(model, p);
    REQUIRE(a->Feed(Tokens(ep.context, c.n_vocab), {}, nullptr).ok());
    REQUIRE(b->Feed(Tokens(ep.context, c.n_vocab), {}, nullptr).ok());
    CHECK(a->kv_bytes() == e.kv_per_session);
    CHECK(a->state_bytes() == e.state_per_session);
    CHECK(a->working_bytes() == e.working_per_session);
    const double measured = static_cast<double>(Held(*a) + Held(*b));
    const double estimated = static_cast<double>(2 * e.per_session);
    CHECK(measured <= estimated);
    CHECK(measured >= 0.95 * estimated);
  }
}

TEST_CASE("EstimateMemory: working buffers as a session holds them, fixtures at two contexts",
          "[ref]") {
  // Activations for the ubatch, the CPU attention scratch (per thread, and growing with the keys in
  // spans of 1024: 1500 positions take two) and the logits row; compared after the session ran at
  // the whole context, when its attention scratch is the largest.
  for (const char* name : {"micro-s1-f32", "tiny-s1-q4km", "tinymoe-s1-q4km"}) {
    auto model = LoadFixture(name);
    const ModelConfig& c = model->config();
    for (int64_t context : {int64_t{100}, int64_t{1500}}) {
      INFO(name << " at " << context << " positions");
      SessionParams p = TestParams(BackendKind::kCpu, /*ubatch=*/128);
      p.n_threads = 2;
      p.max_context = context;
      // Checkpoints every 16 positions fill a budget of 3 and leave a spare, as above.
      p.checkpoint_budget_bytes = static_cast<int64_t>(3 * RecurrentState::BytesFor(c));
      p.checkpoint_every = 16;
      MemoryEstimateParams ep;
      ep.context = context;
      ep.kv_type = DefaultKvType(p.backend);
      ep.ubatch = p.ubatch;
      ep.n_threads = p.n_threads;
      ep.checkpoint_budget_bytes = p.checkpoint_budget_bytes;
      const MemoryEstimate e = EstimateMemory(*model, ep).value();
      // The activations alone are ubatch x model width: far above the logits row.
      CHECK(e.working_per_session > static_cast<size_t>(p.ubatch * c.n_embd) * sizeof(float));

      auto s = NewSession(model, p);
      CHECK(s->working_bytes() == static_cast<size_t>(c.n_vocab) * sizeof(float));  // no context
      REQUIRE(s->Feed(Tokens(context, c.n_vocab), {}, nullptr).ok());
      CHECK(s->working_bytes() == e.working_per_session);
      const double measured = static_cast<double>(Held(*s));
      const double estimated = static_cast<double>(e.per_session);
      CHECK(measured <= estimated);
      CHECK(measured >= 0.95 * estimated);

      // A larger ubatch or more threads need more, and the estimate follows.
      MemoryEstimateParams more = ep;
      more.ubatch = 2 * ep.ubatch;
      CHECK(EstimateMemory(*model, more).value().working_per_session > e.working_per_session);
      more = ep;
      more.n_threads = 4;
      CHECK(EstimateMemory(*model, more).value().working_per_session > e.working_per_session);
    }
  }
}

TEST_CASE("EstimateMemory: working-size defaults are the session's", "[ref]") {
  const MemoryEstimateParams ep;
  const SessionParams sp;
  CHECK(ep.ubatch == sp.ubatch);
  CHECK(ep.n_threads == sp.n_threads);
  CHECK(ep.kv_page_rows == sp.kv_page_rows);
  CHECK(ep.checkpoint_budget_bytes == sp.checkpoint_budget_bytes);
}

TEST_CASE("EstimateMemory: invalid arguments", "[ref]") {
  auto model = LoadFixture("micro-s1-f32");
  const auto code = [&](auto edit) {
    MemoryEstimateParams ep;
    edit(ep);
    return EstimateMemory(*model, ep).status().code();
  };
  CHECK(code([](MemoryEstimateParams&) {}) == StatusCode::kOk);
  CHECK(code([](MemoryEstimateParams& p) { p.context = -1; }) == StatusCode::kInvalidArgument);
  CHECK(code([](MemoryEstimateParams& p) { p.sessions = 0; }) == StatusCode::kInvalidArgument);
  CHECK(code([](MemoryEstimateParams& p) { p.kv_page_rows = 0; }) == StatusCode::kInvalidArgument);
  CHECK(code([](MemoryEstimateParams& p) { p.checkpoint_budget_bytes = -2; }) ==
        StatusCode::kInvalidArgument);
  CHECK(code([](MemoryEstimateParams& p) { p.ubatch = 0; }) == StatusCode::kInvalidArgument);
  CHECK(code([](MemoryEstimateParams& p) { p.n_threads = -1; }) == StatusCode::kInvalidArgument);
  CHECK(code([](MemoryEstimateParams& p) { p.kv_type = static_cast<KvType>(7); }) ==
        StatusCode::kInvalidArgument);
}

TEST_CASE("Session memory limit: refused before allocating, the session unchanged", "[ref]") {
  auto model = LoadFixture("micro-s1-f32");
  const ModelConfig& c = model->config();
  SessionParams p = TestParams(BackendKind::kCpu);
  p.kv_type = KvType::kF32;
  p.kv_page_rows = 64;
  p.max_context = 512;
  p.initial_capacity = 64;
  p.checkpoint_budget_bytes = 0;
  KvCacheOptions kvo;
  kvo.type = KvType::kF32;
  kvo.page_rows = 64;
  const size_t one_page = KvCache::BytesFor(c, 64, kvo);
  const size_t fixed = 2 * RecurrentState::BytesFor(c) + Session::WorkingBytesFor(c, p, 512);

  p.memory_limit_bytes = static_cast<int64_t>(fixed + one_page - 1);
  CHECK(Session::Create(model, p).status().code() == StatusCode::kOutOfMemory);

  p.memory_limit_bytes = static_cast<int64_t>(fixed + one_page);
  auto s = NewSession(model, p);
  REQUIRE(s->Feed(Tokens(64, c.n_vocab), {}, nullptr).ok());
  const size_t kv_before = s->kv_bytes();
  const std::vector<int32_t> transcript = s->transcript();
  const std::vector<float> logits = Copy(s->last_logits());
  // Position 64 needs a second page: over the limit.
  std::vector<int32_t> more = Tokens(65, c.n_vocab);
  CHECK(s->Feed(more, {}, nullptr).code() == StatusCode::kOutOfMemory);
  CHECK(s->kv_bytes() == kv_before);
  CHECK(s->transcript() == transcript);
  CHECK(Copy(s->last_logits()) == logits);

  p.memory_limit_bytes = 0;  // unlimited: the same feed goes through
  auto u = NewSession(model, p);
  CHECK(u->Feed(more, {}, nullptr).ok());
}

TEST_CASE("Session::Reserve allocates the estimate up front and changes no result", "[ref]") {
  auto model = LoadFixture("micro-s1-f32");
  const ModelConfig& c = model->config();
  MemoryEstimateParams ep;
  ep.context = 700;  // two attention key spans, and not a multiple of the page
  ep.kv_type = KvType::kF16;
  ep.kv_page_rows = 64;
  ep.checkpoint_budget_bytes = 0;
  SessionParams p = TestParams(BackendKind::kCpu);
  ep.ubatch = p.ubatch;
  ep.n_threads = p.n_threads;
  const MemoryEstimate e = EstimateMemory(*model, ep).value();
  p.kv_type = ep.kv_type;
  p.kv_page_rows = ep.kv_page_rows;
  p.max_context = ep.context;
  p.initial_capacity = 64;
  p.checkpoint_budget_bytes = 0;
  p.checkpoint_tail = 0;

  auto plain = NewSession(model, p), reserved = NewSession(model, p);
  const std::vector<int32_t> prompt = Tokens(40, c.n_vocab);
  REQUIRE(reserved->Feed(prompt, {}, nullptr).ok());
  const std::vector<float> before = Copy(reserved->last_logits());
  for (bool touch : {false, true}) {  // a second Reserve of the same room is a no-op
    REQUIRE(reserved->Reserve(ep.context, touch).ok());
    CHECK(reserved->kv_bytes() == e.kv_per_session);
    CHECK(reserved->working_bytes() == e.working_per_session);
    CHECK(reserved->size() == 40);
    CHECK(Copy(reserved->last_logits()) == before);
  }
  CHECK(reserved->Reserve(ep.context + 1, false).code() == StatusCode::kContextFull);
  CHECK(reserved->Reserve(-1, false).code() == StatusCode::kInvalidArgument);
  // The prefaulted, reserved session computes what an unreserved one does, bit for bit.
  const std::vector<int32_t> more = Tokens(300, c.n_vocab);
  REQUIRE(plain->Feed(more, {}, nullptr).ok());
  REQUIRE(reserved->Feed(more, {}, nullptr).ok());
  CHECK(Copy(plain->last_logits()) == Copy(reserved->last_logits()));
  CHECK(reserved->kv_bytes() == e.kv_per_session);  // nothing more was allocated

  // A memory limit of exactly the estimate's per_session admits the whole context; a byte less
  // does not (the session refuses before allocating and stays as it was).
  p.memory_limit_bytes = static_cast<int64_t>(e.per_session);
  auto fits = NewSession(model, p);
  CHECK(fits->Reserve(ep.context, true).ok());
  p.memory_limit_bytes = static_cast<int64_t>(e.per_session - 1);
  auto tight = NewSession(model, p);
  CHECK(tight->Reserve(ep.context, false).code() == StatusCode::kOutOfMemory);
  KvCacheOptions kvo;
  kvo.type = ep.kv_type;
  kvo.page_rows = ep.kv_page_rows;
  CHECK(tight->kv_bytes() == KvCache::BytesFor(c, 64, kvo));  // the initial page only
}

TEST_CASE("EstimateMemory: the 4B shape at 262,144 tokens with q8_0 KV", "[ref]") {
  // Hyperparameters of Qwen3.5-4B (../shared/spec/qwen35-architecture.md §3, §13.3).
  ModelConfig c;
  c.n_layer = 32;
  c.n_head_kv = 4;
  c.head_dim = 256;
  c.n_ctx_train = 262144;
  c.conv_kernel = 4;
  c.ssm_hk = 16;
  c.ssm_dk = 128;
  c.ssm_hv = 32;
  c.ssm_dv = 128;
  c.n_embd = 2560;  // the widths the working buffers need (§3)
  c.n_head = 16;
  c.n_ff = 9216;
  c.n_vocab = 248320;
  for (int64_t l = 0; l < c.n_layer; ++l) c.recurrent.push_back((l + 1) % 4 != 0);
  MemoryEstimateParams ep;  // context 0: the trained context
  ep.kv_type = KvType::kF16;
  ep.n_threads = 8;  // a fixed pool for the printed working term (docs/memory.md)
  const MemoryEstimate f16 = EstimateMemory(c, ep).value();
  // The spec's worked sizes: 8 GiB of f16 KV at 262k, 52,690,944 B of recurrent state.
  CHECK(f16.kv_per_session == (size_t{8} << 30));
  CHECK(f16.state_per_session == 52690944);
  ep.kv_type = KvType::kQ8_0;
  const MemoryEstimate q8 = EstimateMemory(c, ep).value();
  // q8_0: 34 bytes per 32 values; 8 layers x (K + V) x 1024 values per position.
  CHECK(q8.kv_per_session == size_t{262144} * 8 * 2 * (1024 / 32 * 34));
  CHECK(q8.checkpoints_per_session == 9 * q8.state_per_session);
  std::printf(
      "4B shape, 262144 tokens, q8_0 KV, 1 session: KV %zu B, state %zu B, checkpoints %zu B, "
      "working %zu B, per session %zu B (%.2f GiB; weights not included)\n",
      q8.kv_per_session, q8.state_per_session, q8.checkpoints_per_session, q8.working_per_session,
      q8.per_session, static_cast<double>(q8.per_session) / (1 << 30));
}

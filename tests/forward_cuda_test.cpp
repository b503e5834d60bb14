// The CUDA forward pass and CUDA sessions: golden logits on every fixture (the exact-math bar of
// the reference path), prefill == token-by-token decode bit for bit, the device state mirror
// following the host state through truncation, restore and reset, sessions (turn 2 == full
// re-prefill, fork, save/load), and cancellation from another thread. Without a device every GPU
// case skips with "no CUDA device: skipped"; the UNSUPPORTED error of a CUDA context is checked
// everywhere.
#include "model/forward_cuda.h"

#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cuda_test_util.h"
#include "model_test_util.h"
#include "ops/cuda_device.h"
#include "qwenrt/qwenrt.h"
#include "session/session.h"
#include "session_test_util.h"

namespace qwenrt::test {
namespace {

std::shared_ptr<const Model> Fixture(const std::string& name) {
  static std::map<std::string, std::shared_ptr<const Model>> models;
  auto& m = models[name];
  if (m == nullptr) m = LoadFixture(name);
  return m;
}

bool Same(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Index and size of the largest difference, for diagnostics.
std::string WorstDiff(const std::vector<float>& a, const std::vector<float>& b) {
  size_t worst = 0;
  double d = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    const double di = std::abs(double(a[i]) - b[i]);
    if (di > d) d = di, worst = i;
  }
  return "max |d| = " + std::to_string(d) + " at " + std::to_string(worst);
}

SessionParams CudaParams(int64_t ubatch = 64) { return TestParams(BackendKind::kCuda, ubatch); }

// Greedy over the first 512 ids (plain byte-level tokens of the fixtures), so a generation never
// stops early on an end-of-generation token.
int32_t ArgmaxPlain(const float* x, int64_t n) { return Argmax(x, std::min<int64_t>(n, 512)); }

GenerateOptions Greedy(int64_t n) {
  GenerateOptions g;
  g.max_tokens = n;
  g.sampler = ArgmaxPlain;
  return g;
}

// A host-side StateMirror standing in for the GPU: "device" contents per state, and a log of the
// calls, so the pending-state protocol of RecurrentState is checked on any machine.
class FakeMirror final : public StateMirror {
 public:
  std::map<const RecurrentState*, float> device;  // the first float of the held contents
  std::vector<std::string> calls;
  bool room = true;  // false: Clone goes through the host

  void Hold(RecurrentState& rec, float value) {
    device[&rec] = value;
    rec.SetPending(this);
  }
  Status Fetch(RecurrentState& rec) override {
    calls.push_back("Fetch");
    rec.SetPending(nullptr);
    rec.host_conv(0)[0] = device.at(&rec);
    device.erase(&rec);
    return OkStatus();
  }
  void Forget(const RecurrentState& rec) override {
    calls.push_back("Forget");
    device.erase(&rec);
  }
  void Moved(const RecurrentState& from, const RecurrentState& to) override {
    calls.push_back("Moved");
    device[&to] = device.at(&from);
    device.erase(&from);
  }
  Status Clone(const RecurrentState& from, RecurrentState& to) override {
    calls.push_back("Clone");
    if (!room) {
      to.host_conv(0)[0] = device.at(&from);
      return OkStatus();
    }
    Hold(to, device.at(&from));
    return OkStatus();
  }
};

TEST_CASE(
    "RecurrentState: accessors never fetch; Fetch, Copy, CopyFrom, move and Reset follow the "
    "mirror",
    "[cuda][state]") {
  auto model = Fixture("micro-s1-f32");
  RecurrentState a = RecurrentState::Create(model->config()).value();
  REQUIRE(a.n_layers() > 0);
  FakeMirror m;
  CHECK(a.Fetch().ok());  // not pending: nothing to do
  CHECK(m.calls.empty());

  m.Hold(a, 7.0f);
  const uint64_t lineage = a.lineage();
  RecurrentState b = a.Copy().value();  // stays on the "device"
  CHECK(b.pending() == &m);
  CHECK(m.device.at(&b) == 7.0f);
  RecurrentState c = std::move(b);  // the held copy is re-keyed
  CHECK(c.pending() == &m);
  CHECK(b.pending() == nullptr);
  CHECK(m.device.count(&c) == 1);
  CHECK(m.device.count(&b) == 0);

  REQUIRE(a.Fetch().ok());  // explicit: the host buffers become current, the lineage is kept
  CHECK(a.pending() == nullptr);
  CHECK(a.lineage() == lineage);
  CHECK(std::as_const(a).conv(0)[0] == 7.0f);

  RecurrentState d = RecurrentState::Create(model->config()).value();
  REQUIRE(d.CopyFrom(c).ok());  // restore from a held copy: on the "device"
  CHECK(d.pending() == &m);
  m.room = false;
  RecurrentState e = RecurrentState::Create(model->config()).value();
  REQUIRE(e.CopyFrom(c).ok());  // no room: fetched straight into e, c stays held
  CHECK(e.pending() == nullptr);
  CHECK(c.pending() == &m);
  CHECK(e.conv(0)[0] == 7.0f);

  d.Reset();  // held contents dropped, not fetched
  CHECK(d.pending() == nullptr);
  CHECK(d.conv(0)[0] == 0.0f);
  std::erase(m.calls, "Moved");  // (StatusOr moves its value too)
  const std::vector<std::string> want = {"Clone", "Fetch", "Clone", "Clone", "Forget"};
  CHECK(m.calls == want);
  c.Reset();  // nothing may be held when m goes
  CHECK(m.device.empty());
}

TEST_CASE("A CUDA context is UNSUPPORTED without a device, and works with one", "[cuda]") {
  auto model = Fixture("micro-s1-f32");
  auto ctx = ForwardContext::Create(*model, BackendKind::kCuda, nullptr);
  auto session = Session::Create(model, CudaParams());
  if (!CudaAvailable()) {
    REQUIRE(!ctx.ok());
    CHECK(ctx.status().code() == StatusCode::kUnsupported);
    CHECK(!ctx.status().message().empty());
    REQUIRE(!session.ok());
    CHECK(session.status().code() == StatusCode::kUnsupported);
    WARN("no CUDA device: skipped the GPU cases (" << ctx.status().message() << ")");
    return;
  }
  REQUIRE(ctx.ok());
  CHECK((*ctx)->kind() == BackendKind::kCuda);
  REQUIRE(session.ok());
  WARN("CUDA device: " << CudaDeviceName().value());
}

TEST_CASE("CUDA golden logits meet the exact-math bar and match the reference path",
          "[cuda][golden]") {
  QWENRT_SKIP_WITHOUT_GPU();
  for (const char* name : {"micro-s1-f32", "tiny-s1-q4km", "tinymoe-s1-q4km"}) {
    auto model = Fixture(name);
    const int64_t V = model->config().n_vocab;
    for (const char* seq : {"seqA", "seqB"}) {
      const auto tokens = ReadTokens(std::string("tokens/") + seq + ".txt");
      const auto exact = ReadF32(std::string("logits/") + name + "." + seq + ".exact.f32");
      REQUIRE(exact.size() == tokens.size() * static_cast<size_t>(V));
      Runner cuda(model, BackendKind::kCuda);
      const auto got = cuda.Run(tokens);
      Runner ref(model, BackendKind::kRef);
      const auto want = ref.Run(tokens);
      const Distance d = Compare(got, exact, V), dr = Compare(got, want, V);
      INFO(name << " " << seq);
      WARN(name << " " << seq << " cuda: max|d|/max|exact| = " << d.max_rel << ", top-1 = "
                << d.top1 << "; vs ref: max rel " << dr.max_rel << ", top-1 " << dr.top1);
      CHECK(d.max_rel <= 1e-3);
      CHECK(dr.max_rel <= 1e-4);
    }
  }
}

TEST_CASE("CUDA: prefill == token by token == uneven pieces, bit for bit", "[cuda]") {
  QWENRT_SKIP_WITHOUT_GPU();
  for (const char* name : {"micro-s1-f32", "tiny-s1-q4km", "tinymoe-s1-q4km"}) {
    auto model = Fixture(name);
    const auto tokens = RandomTokens(70, 7, std::min<int64_t>(model->config().n_vocab, 512));
    INFO(name);
    Runner whole(model, BackendKind::kCuda);
    const auto a = whole.Run(tokens);
    Runner one(model, BackendKind::kCuda);
    const auto b = one.Run(tokens, {1});
    CHECK(Same(a, b));
    if (!Same(a, b)) WARN(name << " whole vs one by one: " << WorstDiff(a, b));
    Runner uneven(model, BackendKind::kCuda, /*max_ubatch=*/7);  // internal ubatches of 7
    const auto c = uneven.Run(tokens, {3, 11, 1, 29});
    CHECK(Same(a, c));
    if (!Same(a, c)) WARN(name << " whole vs uneven: " << WorstDiff(a, c));
  }
}

TEST_CASE("CUDA: decode by graph replay equals eager decode, across KV growth (recapture)",
          "[cuda]") {
  QWENRT_SKIP_WITHOUT_GPU();
  auto model = Fixture("tiny-s1-q4km");
  const int64_t V = model->config().n_vocab;
  const auto tokens = RandomTokens(40, 17, 512);
  auto decode = [&](bool graphs) {
    CudaForward::Options options;
    options.graphs = graphs;
    auto cuda = CudaForward::Create(*model, options).value();
    KvCacheOptions pages;
    pages.page_rows =
        8;  // the host cache grows 8 positions at a time, the device mirror 8 -> 16 -> 32 -> 64
    KvCache kv = KvCache::Create(model->config(), 0, /*initial_capacity=*/8, pages).value();
    RecurrentState rec = RecurrentState::Create(model->config()).value();
    std::vector<float> all(tokens.size() * static_cast<size_t>(V));
    for (size_t i = 0; i < tokens.size(); ++i) {
      REQUIRE(kv.Reserve(kv.size() + 1).ok());  // Run leaves that to Forward
      REQUIRE(cuda->Run(kv, rec, std::span(tokens.data() + i, 1), false, all.data() + i * V).ok());
    }
    return all;
  };
  const auto replayed = decode(true), eager = decode(false);
  CHECK(Same(replayed, eager));
  if (!Same(replayed, eager)) WARN("graph vs eager: " << WorstDiff(replayed, eager));
  Runner whole(model, BackendKind::kCuda);
  CHECK(Same(whole.Run(tokens), replayed));
}

TEST_CASE("CUDA: the device mirror follows the host state (truncate, restore, reset, swap)",
          "[cuda]") {
  QWENRT_SKIP_WITHOUT_GPU();
  auto model = Fixture("tiny-s1-q4km");
  const int64_t V = model->config().n_vocab;
  const auto tokens = RandomTokens(40, 11, 512);
  Runner r(model, BackendKind::kCuda);
  const auto full = r.Run(tokens);

  // Restore the recurrent state of position 20 and cut the KV cache back: the rest must match.
  Runner s(model, BackendKind::kCuda);
  s.Run(std::vector<int32_t>(tokens.begin(), tokens.begin() + 20));
  RecurrentState at20 = s.rec->Copy().value();
  s.Run(std::vector<int32_t>(tokens.begin() + 20, tokens.begin() + 33));
  s.kv->Truncate(20);
  REQUIRE(s.rec->CopyFrom(at20).ok());
  const auto tail = s.Run(std::vector<int32_t>(tokens.begin() + 20, tokens.end()));
  CHECK(std::memcmp(tail.data(), full.data() + 20 * V, tail.size() * sizeof(float)) == 0);

  // Reset to empty, then a second (kv, rec) pair through the same context, then the first again.
  s.Reset();
  const auto again = s.Run(tokens);
  CHECK(Same(again, full));
  KvCache kv2 = KvCache::Create(model->config()).value();
  RecurrentState rec2 = RecurrentState::Create(model->config()).value();
  std::vector<float> l2(static_cast<size_t>(V));
  REQUIRE(Forward(*s.ctx, kv2, rec2, std::span(tokens.data(), 5), false, l2.data()).ok());
  CHECK(std::memcmp(l2.data(), full.data() + 4 * V, V * sizeof(float)) == 0);
  std::vector<float> l1(static_cast<size_t>(V));
  const int32_t next = 3;
  REQUIRE(Forward(*s.ctx, *s.kv, *s.rec, std::span(&next, 1), false, l1.data()).ok());
  Runner fresh(model, BackendKind::kCuda);
  auto ext = tokens;
  ext.push_back(next);
  const auto want = fresh.Run(ext);
  CHECK(std::memcmp(l1.data(), want.data() + 40 * V, V * sizeof(float)) == 0);

  // The host state after a CUDA run is complete once fetched: the reference path continues from it.
  Runner ref(model, BackendKind::kRef);
  ref.kv = std::move(s.kv);
  ref.rec = std::move(s.rec);
  CHECK(ref.rec->pending() != nullptr);  // the newest contents are still on the device
  REQUIRE(ref.rec->Fetch().ok());
  CHECK(ref.rec->pending() == nullptr);
  const int32_t more = 9;
  std::vector<float> lr(static_cast<size_t>(V));
  REQUIRE(Forward(*ref.ctx, *ref.kv, *ref.rec, std::span(&more, 1), false, lr.data()).ok());
  ext.push_back(more);
  Runner ref_full(model, BackendKind::kRef);
  const auto want_ref = ref_full.Run(ext);
  const Distance d = Compare(lr, std::vector<float>(want_ref.end() - V, want_ref.end()), V);
  CHECK(d.max_rel <= 1e-4);
}

// Bitwise equality of two recurrent states (fetching whatever is pending).
bool SameState(RecurrentState& a, RecurrentState& b) {
  REQUIRE(a.Fetch().ok());
  REQUIRE(b.Fetch().ok());
  if (a.n_layers() != b.n_layers()) return false;
  for (int64_t g = 0; g < a.n_layers(); ++g) {
    if (std::memcmp(a.conv(g), b.conv(g), a.conv_floats() * sizeof(float)) != 0) return false;
    if (std::memcmp(a.ssm(g), b.ssm(g), a.ssm_floats() * sizeof(float)) != 0) return false;
  }
  return true;
}

TEST_CASE(
    "CUDA: checkpoint copies stay on the device, move, restore exactly and survive the context",
    "[cuda]") {
  QWENRT_SKIP_WITHOUT_GPU();
  auto model = Fixture("tiny-s1-q4km");
  const int64_t V = model->config().n_vocab;
  const auto tokens = RandomTokens(40, 23, 512);
  Runner full(model, BackendKind::kCuda);
  const auto want = full.Run(tokens);
  Runner at20(model, BackendKind::kCuda);
  at20.Run(std::vector<int32_t>(tokens.begin(), tokens.begin() + 20));

  Runner r(model, BackendKind::kCuda);
  r.Run(std::vector<int32_t>(tokens.begin(), tokens.begin() + 20));
  RecurrentState snap = r.rec->Copy().value();
  CHECK(snap.pending() != nullptr);  // a device copy: nothing crossed the bus
  RecurrentState moved = std::move(snap);
  CHECK(moved.pending() != nullptr);
  CHECK(snap.pending() == nullptr);
  r.Run(std::vector<int32_t>(tokens.begin() + 20, tokens.begin() + 31));
  r.kv->Truncate(20);
  REQUIRE(r.rec->CopyFrom(moved).ok());  // restore on the device
  CHECK(r.rec->pending() != nullptr);
  const auto tail = r.Run(std::vector<int32_t>(tokens.begin() + 20, tokens.end()));
  CHECK(std::memcmp(tail.data(), want.data() + 20 * V, tail.size() * sizeof(float)) == 0);
  CHECK(SameState(moved, *at20.rec));  // fetched on demand, bit for bit

  // A copy outlives its context: destroying the context hands it to the host.
  std::unique_ptr<RecurrentState> orphan;
  {
    Runner tmp(model, BackendKind::kCuda);
    tmp.Run(std::vector<int32_t>(tokens.begin(), tokens.begin() + 20));
    orphan = std::make_unique<RecurrentState>(tmp.rec->Copy().value());
    CHECK(orphan->pending() != nullptr);
  }
  CHECK(orphan->pending() == nullptr);
  CHECK(SameState(*orphan, *at20.rec));
}

TEST_CASE("CUDA sessions: turn 2 reuses turn 1 and equals a full re-prefill; fork; save/load",
          "[cuda][session]") {
  QWENRT_SKIP_WITHOUT_GPU();
  auto model = Fixture("tiny-s1-q4km");
  const int64_t V = model->config().n_vocab;
  const auto turn1 = RandomTokens(90, 21, 512);
  SessionParams p = CudaParams(32);
  p.checkpoint_every = 32;  // so a divergence inside turn 1 has a checkpoint before it
  auto s = NewSession(model, p);
  REQUIRE(s->Feed(turn1, {}, nullptr).ok());
  std::vector<int32_t> reply;
  REQUIRE(s->Generate(Greedy(12), &reply, nullptr).ok());
  auto turn2 = turn1;
  turn2.insert(turn2.end(), reply.begin(), reply.end());
  const auto extra = RandomTokens(17, 22, 512);
  turn2.insert(turn2.end(), extra.begin(), extra.end());
  FeedReport r;
  REQUIRE(s->Feed(turn2, {}, &r).ok());
  CHECK(r.reused_tokens >= 90);
  CHECK(r.prefilled_tokens == static_cast<int64_t>(turn2.size()) - r.reused_tokens);
  auto full = NewSession(model, CudaParams(32));
  REQUIRE(full->Feed(turn2, {}, nullptr).ok());
  CHECK(Same(Copy(s->last_logits()), Copy(full->last_logits())));

  // Divergence inside turn 1: resume from a checkpoint before it.
  auto div = turn2;
  div[60] = (div[60] + 1) % 512;
  REQUIRE(s->Feed(div, {}, &r).ok());
  CHECK(r.reused_tokens > 0);  // a checkpoint before the divergence (every 32 tokens)
  CHECK(r.reused_tokens <= 60);
  auto full_div = NewSession(model, CudaParams(32));
  REQUIRE(full_div->Feed(div, {}, nullptr).ok());
  CHECK(Same(Copy(s->last_logits()), Copy(full_div->last_logits())));

  // Fork: both branches continue like fresh sessions.
  auto f = s->Fork();
  REQUIRE(f.ok());
  std::vector<int32_t> a, b;
  REQUIRE(s->Generate(Greedy(5), &a, nullptr).ok());
  REQUIRE((*f)->Generate(Greedy(5), &b, nullptr).ok());
  CHECK(a == b);

  // Save, load into a new session, continue: same as the original.
  const std::string path = "/tmp/qwenrt_cuda_session_" + std::to_string(::getpid()) + ".qws";
  REQUIRE(s->SaveToFile(path).ok());
  auto loaded = NewSession(model, CudaParams(32));
  REQUIRE(loaded->LoadFromFile(path).ok());
  std::filesystem::remove(path);
  std::vector<int32_t> c, d;
  REQUIRE(s->Generate(Greedy(4), &c, nullptr).ok());
  REQUIRE(loaded->Generate(Greedy(4), &d, nullptr).ok());
  CHECK(c == d);
  (void)V;
}

TEST_CASE("CUDA sessions honour cancellation from another thread", "[cuda][session]") {
  QWENRT_SKIP_WITHOUT_GPU();
  auto model = Fixture("tiny-s1-q4km");
  const auto tokens = RandomTokens(400, 31, 512);
  SessionParams p = CudaParams(16);
  std::atomic<bool> cancel{false};

  // Mid-prefill, from another thread: the session stays consistent and resumable.
  auto s = NewSession(model, p);
  FeedOptions o;
  o.cancel = &cancel;
  o.progress = [&](int64_t done, int64_t) {
    if (done >= 64)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));  // give the stopper time
    return true;
  };
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    cancel = true;
  });
  FeedReport r;
  Status st = s->Feed(tokens, o, &r);
  stopper.join();
  CHECK(st.code() == StatusCode::kCancelled);
  CHECK(s->size() < static_cast<int64_t>(tokens.size()));
  CHECK(s->size() % 16 == 0);
  cancel = false;
  REQUIRE(s->Feed(tokens, o, &r).ok());
  auto full = NewSession(model, p);
  REQUIRE(full->Feed(tokens, {}, nullptr).ok());
  CHECK(Same(Copy(s->last_logits()), Copy(full->last_logits())));

  // Mid-generation, from another thread.
  GenerateOptions g = Greedy(100000);
  g.cancel = &cancel;
  std::thread stopper2([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    cancel = true;
  });
  std::vector<int32_t> out;
  GenerateReport gr;
  st = s->Generate(g, &out, &gr);
  stopper2.join();
  CHECK(st.code() == StatusCode::kCancelled);
  CHECK(!out.empty());
  CHECK(out.size() < 100000);
  CHECK(s->size() == static_cast<int64_t>(tokens.size() + out.size()));
}

TEST_CASE("C API: a CUDA session chats and is cancelled from another thread", "[cuda][capi]") {
  QWENRT_SKIP_WITHOUT_GPU();
  const std::string path = DataPath("tiny-s1-q4km.gguf");
  qwenrt_model* model = nullptr;
  REQUIRE(qwenrt_model_load(path.c_str(), nullptr, &model) == QWENRT_OK);
  qwenrt_session_params sp;
  QWENRT_INIT(qwenrt_session_params_init, &sp);
  sp.backend = QWENRT_BACKEND_CUDA;
  qwenrt_session* session = nullptr;
  REQUIRE(qwenrt_session_create(model, &sp, &session) == QWENRT_OK);

  // A long prefill in small ubatches; the cancel lands while it runs (or, if it comes first, the
  // call is cancelled as it starts: qwenrt_session_cancel's contract). Either way: CANCELLED, and
  // the session holds an exact prefix and continues.
  std::vector<int32_t> prompt = RandomTokens(4000, 41, 512);
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(3));
    CHECK(qwenrt_session_cancel(session) == QWENRT_OK);
  });
  const qwenrt_status st = qwenrt_session_feed(session, prompt.data(), prompt.size(), nullptr);
  stopper.join();
  CHECK(st == QWENRT_CANCELLED);
  const int64_t held = qwenrt_session_n_tokens(session);
  CHECK(held < static_cast<int64_t>(prompt.size()));
  REQUIRE(qwenrt_session_feed(session, prompt.data(), 200, nullptr) == QWENRT_OK);
  CHECK(qwenrt_session_n_tokens(session) == 200);
  qwenrt_generate_params gp;
  QWENRT_INIT(qwenrt_generate_params_init, &gp);
  gp.max_tokens = 8;
  CHECK(qwenrt_session_generate(session, nullptr, &gp, nullptr) == QWENRT_OK);
  CHECK(qwenrt_session_n_tokens(session) > 200);
  qwenrt_session_free(session);
  qwenrt_model_free(model);
}

}  // namespace
}  // namespace qwenrt::test

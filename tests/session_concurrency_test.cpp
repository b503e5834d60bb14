// Many sessions on one shared Model from many threads give exactly what running them one after
// another gives (the Model is immutable; each Session owns its state, scratch and thread pool).
#include <catch2/catch.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "session/session.h"

namespace qwenrt {
namespace {

const std::string kTiny = std::string(QWENRT_TEST_DATA) + "/tiny-s1-q4km.gguf";
const std::string kMicro = std::string(QWENRT_TEST_DATA) + "/micro-s1-f32.gguf";

std::vector<int32_t> RandomTokens(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> d(0, 511);
  std::vector<int32_t> out(static_cast<size_t>(n));
  for (auto& t : out) t = d(rng);
  return out;
}

int32_t Argmax(const float* x, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 1; i < n; ++i)
    if (x[i] > x[best]) best = i;
  return static_cast<int32_t>(best);
}

// What one scripted two-turn chat produces: every token generated and the final logits.
struct ChatResult {
  std::vector<int32_t> tokens;
  std::vector<float> logits;
  Status status;
};

ChatResult RunChat(std::shared_ptr<const Model> model, BackendKind backend, uint32_t seed) {
  ChatResult out;
  SessionParams p;
  p.backend = backend;
  p.n_threads = 1;
  p.ubatch = 48;
  auto created = Session::Create(model, p);
  if (!created.ok()) {
    out.status = created.status();
    return out;
  }
  auto s = std::move(created).value();
  GenerateOptions g;
  g.max_tokens = 8;
  g.sampler = Argmax;
  std::vector<int32_t> prompt = RandomTokens(100 + seed % 17, seed);
  out.status = s->Feed(prompt, {}, nullptr);
  if (out.status.ok()) out.status = s->Generate(g, &out.tokens, nullptr);
  // Turn 2 re-renders the history with the last 2 prompt tokens and the reply changed.
  std::vector<int32_t> turn2(prompt.begin(), prompt.end() - 2);
  std::vector<int32_t> extra = RandomTokens(30, seed + 1000);
  turn2.insert(turn2.end(), extra.begin(), extra.end());
  if (out.status.ok()) out.status = s->Feed(turn2, {}, nullptr);
  if (out.status.ok()) out.status = s->Generate(g, &out.tokens, nullptr);
  auto l = s->last_logits();
  out.logits.assign(l.begin(), l.end());
  return out;
}

void CheckParallelEqualsSequential(const std::string& path, BackendKind backend, int n_sessions) {
  auto m = Model::Load(path);
  REQUIRE(m.ok());
  std::shared_ptr<const Model> model = *m;
  std::vector<ChatResult> sequential, parallel(static_cast<size_t>(n_sessions));
  for (int i = 0; i < n_sessions; ++i) sequential.push_back(RunChat(model, backend, 100 + i));
  std::vector<std::thread> threads;
  for (int i = 0; i < n_sessions; ++i)
    threads.emplace_back(
        [&, i] { parallel[static_cast<size_t>(i)] = RunChat(model, backend, 100 + i); });
  for (auto& t : threads) t.join();
  for (int i = 0; i < n_sessions; ++i) {
    INFO("session " << i);
    REQUIRE(sequential[i].status.ok());
    REQUIRE(parallel[i].status.ok());
    CHECK(sequential[i].tokens.size() == 16);
    CHECK(parallel[i].tokens == sequential[i].tokens);
    CHECK(parallel[i].logits == sequential[i].logits);
  }
  // Different scripts really produce different results (the comparison above is not vacuous).
  CHECK(sequential[0].logits != sequential[1].logits);
}

TEST_CASE("Two threads driving two sessions on one Model == sequential", "[cpu]") {
  CheckParallelEqualsSequential(kTiny, BackendKind::kCpu, 2);
}

TEST_CASE("Four sessions on four threads, reference path (micro model) == sequential", "[ref]") {
  CheckParallelEqualsSequential(kMicro, BackendKind::kRef, 4);
}

}  // namespace
}  // namespace qwenrt

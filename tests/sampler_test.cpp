// Sampler tests: each stage's semantics on crafted logits (checked through empirical frequencies
// against the exact distribution), seeded reproducibility, state save/restore, parameter
// validation, and stop strings.
#include "chat/sampler.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace qwenrt {
namespace {

Sampler Make(const SamplerParams& p, int32_t V) {
  auto s = Sampler::Create(p, V);
  REQUIRE(s.ok());
  return std::move(*s);
}

int32_t Draw(Sampler& s, const std::vector<float>& logits) {
  auto id = s.Sample(logits);
  REQUIRE(id.ok());
  return *id;
}

// Frequencies of n draws.
std::map<int32_t, double> Frequencies(Sampler& s, const std::vector<float>& logits, int n) {
  std::map<int32_t, double> f;
  for (int i = 0; i < n; ++i) f[Draw(s, logits)] += 1.0 / n;
  return f;
}

std::vector<double> Softmax(const std::vector<float>& logits, float t = 1.0f) {
  double mx = -INFINITY, sum = 0;
  for (float l : logits) mx = std::max(mx, static_cast<double>(l));
  std::vector<double> p;
  for (float l : logits) p.push_back(std::exp((l - mx) / t)), sum += p.back();
  for (double& x : p) x /= sum;
  return p;
}

const std::vector<float> kLogits = {1.0f, 3.0f, 2.0f, 0.5f, 2.5f, -1.0f};  // order: 1 4 2 0 3 5

TEST_CASE("greedy: temperature 0 takes the argmax", "[sampler]") {
  SamplerParams p;
  p.temperature = 0.0f;
  Sampler s = Make(p, 6);
  for (int i = 0; i < 10; ++i) CHECK(Draw(s, kLogits) == 1);
  p.temperature = 0.7f;
  p.top_k = 1;
  Sampler k1 = Make(p, 6);
  CHECK(Draw(k1, kLogits) == 1);
  // Ties go to the lowest id.
  Sampler t = Make(SamplerParams{.temperature = 0.0f, .logit_bias = {}}, 4);
  CHECK(Draw(t, {0.0f, 5.0f, 5.0f, 1.0f}) == 1);
}

// Greedy sampling (the one-pass argmax when no penalty applies) against the definition: each
// token's logit, -inf if banned or NaN, plus its biases in order, -inf if masked; the highest wins,
// ties to the lowest id; nothing left is INTERNAL. Ties, NaN, +-inf, repeated and banned biased
// ids.
TEST_CASE("greedy == argmax of the biased, banned, masked logits", "[sampler]") {
  constexpr int32_t V = 1037;
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> level(0, 7);  // few distinct values: many ties
  const std::vector<int32_t> banned = {3, 500, 1036};
  const std::vector<std::pair<int32_t, float>> bias = {
      {7, 2.5f}, {9, -1e9f}, {7, 0.5f}, {500, 4.0f}, {11, 1.0f}};
  Sampler s = Make(SamplerParams{.temperature = 0.0f, .logit_bias = bias}, V);
  REQUIRE(s.SetBanned(banned).ok());
  for (int round = 0; round < 300; ++round) {
    std::vector<float> logits(V);
    for (float& l : logits) l = static_cast<float>(level(rng));
    for (int i = 0; i < 20; ++i) logits[rng() % V] = NAN;
    for (int i = 0; i < 20; ++i) logits[rng() % V] = -INFINITY;
    if (round % 7 == 0) logits[rng() % V] = INFINITY;
    if (round % 5 == 0) logits[7] = 6.0f;  // 7 + its biases ties or beats the rest
    std::vector<uint32_t> mask((V + 31) / 32, 0);
    for (int32_t i = 0; i < V; ++i) {
      if (rng() % 3 != 0) mask[static_cast<size_t>(i >> 5)] |= 1u << (i & 31);
    }
    if (round % 11 == 0) std::fill(logits.begin(), logits.end(), -INFINITY);  // nothing left
    for (const uint32_t* allowed :
         {static_cast<const uint32_t*>(nullptr), static_cast<const uint32_t*>(mask.data())}) {
      std::vector<float> eff(logits);
      for (int32_t b : banned) eff[static_cast<size_t>(b)] = -INFINITY;
      for (float& e : eff) e = std::isnan(e) ? -INFINITY : e;
      for (const auto& [id, b] : bias) eff[static_cast<size_t>(id)] += b;
      int32_t want = -1;
      for (int32_t i = 0; i < V; ++i) {
        const bool ok = allowed == nullptr || ((allowed[i >> 5] >> (i & 31)) & 1u);
        if (ok && eff[static_cast<size_t>(i)] != -INFINITY &&
            (want < 0 || eff[static_cast<size_t>(i)] > eff[static_cast<size_t>(want)]))
          want = i;
      }
      auto got = s.Sample(logits, allowed);
      if (want < 0) {
        CHECK(got.status().code() == StatusCode::kInternal);
      } else {
        REQUIRE(got.ok());
        CHECK(*got == want);
      }
    }
  }
}

TEST_CASE("temperature 1: frequencies follow the softmax", "[sampler]") {
  Sampler s = Make(SamplerParams{.seed = 42, .logit_bias = {}}, 6);
  const auto f = Frequencies(s, kLogits, 40000);
  const auto p = Softmax(kLogits);
  for (int i = 0; i < 6; ++i) {
    const double got = f.count(i) ? f.at(i) : 0.0;
    CHECK(std::abs(got - p[static_cast<size_t>(i)]) < 0.01);
  }
}

TEST_CASE("temperature sharpens and flattens", "[sampler]") {
  for (float t : {0.5f, 2.0f}) {
    Sampler s = Make(SamplerParams{.temperature = t, .seed = 7, .logit_bias = {}}, 6);
    const auto f = Frequencies(s, kLogits, 40000);
    const auto p = Softmax(kLogits, t);
    for (int i = 0; i < 6; ++i)
      CHECK(std::abs((f.count(i) ? f.at(i) : 0.0) - p[static_cast<size_t>(i)]) < 0.012);
  }
}

TEST_CASE("top-k keeps the k most likely, renormalised", "[sampler]") {
  Sampler s = Make(SamplerParams{.top_k = 2, .seed = 3, .logit_bias = {}}, 6);
  const auto f = Frequencies(s, kLogits, 20000);
  CHECK(f.size() == 2);
  const double p1 = 1.0 / (1.0 + std::exp(-0.5));  // logits 3 and 2.5
  CHECK(std::abs(f.at(1) - p1) < 0.015);
  CHECK(std::abs(f.at(4) - (1 - p1)) < 0.015);
}

TEST_CASE("top-p keeps the smallest nucleus reaching p", "[sampler]") {
  const auto p = Softmax(kLogits);  // sorted: id1 .464, id4 .281, id2 .171, id0 .063, ...
  SamplerParams params{.top_p = 0.7f, .seed = 5, .logit_bias = {}};
  Sampler s = Make(params, 6);
  auto f = Frequencies(s, kLogits, 20000);
  CHECK(f.size() == 2);  // .464 < .7 <= .745
  CHECK(std::abs(f.at(1) - p[1] / (p[1] + p[4])) < 0.015);
  params.top_p = 0.75f;  // .745 < .75: one more
  Sampler s3 = Make(params, 6);
  CHECK(Frequencies(s3, kLogits, 5000).size() == 3);
  params.top_p = 0.0f;  // at least one token is always kept
  Sampler s0 = Make(params, 6);
  CHECK(Frequencies(s0, kLogits, 100).size() == 1);
}

TEST_CASE("top-p on a large vocabulary (partial sorting path)", "[sampler]") {
  // 5000 tokens: 300 of logit 2, the rest 0. p = 0.5 needs part of the 300 (beyond the first 64
  // sorted), never a 0-logit token.
  std::vector<float> logits(5000, 0.0f);
  for (int i = 0; i < 300; ++i) logits[static_cast<size_t>(i * 13 % 5000)] = 2.0f;
  const double high = 300 * std::exp(2.0), total = high + 4700;
  REQUIRE(high / total > 0.3);
  Sampler s = Make(SamplerParams{.top_p = 0.3f, .seed = 9, .logit_bias = {}}, 5000);
  for (int i = 0; i < 2000; ++i) CHECK(logits[static_cast<size_t>(Draw(s, logits))] == 2.0f);
  // Same distribution with and without top-p = 1 (off).
  Sampler off = Make(SamplerParams{.top_p = 1.0f, .seed = 9, .logit_bias = {}}, 5000);
  int high_hits = 0;
  for (int i = 0; i < 4000; ++i)
    high_hits += logits[static_cast<size_t>(Draw(off, logits))] == 2.0f;
  CHECK(std::abs(high_hits / 4000.0 - high / total) < 0.03);
}

TEST_CASE("min-p drops tokens below min_p * p_max", "[sampler]") {
  // p relative to max: exp(l - 3): id4 .61, id2 .37, id0 .135, id3 .082, id5 .018
  Sampler s = Make(SamplerParams{.min_p = 0.3f, .seed = 11, .logit_bias = {}}, 6);
  const auto f = Frequencies(s, kLogits, 20000);
  CHECK(f.size() == 3);
  CHECK(f.count(1));
  CHECK(f.count(4));
  CHECK(f.count(2));
}

TEST_CASE("penalties: repetition, presence, frequency over the window", "[sampler]") {
  SamplerParams p;
  p.temperature = 0.0f;
  p.repetition_penalty = 2.0f;
  p.penalty_last_n = 3;
  Sampler s = Make(p, 4);
  const std::vector<float> logits = {3.0f, 2.0f, -1.0f, -1.5f};
  CHECK(Draw(s, logits) == 0);
  s.Accept(0);  // 3 / 2 = 1.5 < 2
  CHECK(Draw(s, logits) == 1);
  s.Accept(1);  // 2 / 2 = 1 < 1.5
  CHECK(Draw(s, logits) == 0);
  s.Accept(2);
  s.Accept(3);  // window {1, 2, 3}: token 0 left it
  CHECK(Draw(s, logits) == 0);
  // Negative logits are multiplied: -1 * 2 = -2 < -1.5.
  Sampler neg = Make(p, 2);
  neg.Accept(0);
  CHECK(Draw(neg, {-1.0f, -1.5f}) == 1);

  SamplerParams pres;
  pres.temperature = 0.0f;
  pres.presence_penalty = 1.0f;
  Sampler ps = Make(pres, 2);
  ps.Accept(0);
  ps.Accept(0);
  CHECK(Draw(ps, {1.9f, 1.0f}) == 1);  // 1.9 - 1 = 0.9 < 1
  CHECK(Draw(ps, {2.1f, 1.0f}) == 0);  // presence counts once

  SamplerParams freq;
  freq.temperature = 0.0f;
  freq.frequency_penalty = 0.5f;
  Sampler fs = Make(freq, 2);
  fs.Accept(0);
  CHECK(Draw(fs, {1.4f, 1.0f}) == 1);  // 1.4 - 0.5 = 0.9 < 1
  fs.Accept(0);
  CHECK(Draw(fs, {1.9f, 1.0f}) == 1);  // 1.9 - 2 * 0.5 = 0.9 < 1
  CHECK(Draw(fs, {2.1f, 1.0f}) == 0);
}

TEST_CASE("logit bias shifts logits before the other stages", "[sampler]") {
  SamplerParams p;
  p.temperature = 0.0f;
  p.logit_bias = {{5, 4.5f}, {1, -10.0f}};
  Sampler s = Make(p, 6);
  CHECK(Draw(s, kLogits) == 5);  // -1 + 4.5 = 3.5 > 2.5
  p.logit_bias = {{5, -INFINITY}, {0, 1.0f}};
  Sampler t = Make(p, 6);
  CHECK(Draw(t, kLogits) == 1);
  p.logit_bias = {{6, 1.0f}};
  CHECK(Sampler::Create(p, 6).status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("bans and -inf are never sampled", "[sampler]") {
  Sampler s = Make(SamplerParams{.seed = 1, .logit_bias = {}}, 6);
  REQUIRE(s.SetBanned(std::vector<int32_t>{1, 4}).ok());
  std::vector<float> logits = kLogits;
  logits[2] = -INFINITY;
  logits[0] = NAN;
  for (int i = 0; i < 500; ++i) {
    const int32_t id = Draw(s, logits);
    CHECK((id == 3 || id == 5));
  }
  CHECK(s.SetBanned(std::vector<int32_t>{6}).code() == StatusCode::kInvalidArgument);
  REQUIRE(s.SetBanned(std::vector<int32_t>{0, 1, 2, 3, 4, 5}).ok());
  CHECK(s.Sample(kLogits).status().code() == StatusCode::kInternal);
  CHECK(s.Sample(std::vector<float>(5)).status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("fixed seed is reproducible; different seeds differ", "[sampler]") {
  const SamplerParams p{.temperature = 0.9f,
                        .top_k = 5,
                        .top_p = 0.95f,
                        .min_p = 0.01f,
                        .repetition_penalty = 1.1f,
                        .seed = 1234,
                        .logit_bias = {}};
  std::vector<float> logits(1000);
  for (size_t i = 0; i < logits.size(); ++i)
    logits[i] = std::sin(static_cast<float>(i) * 0.37f) * 3.0f;
  auto run = [&](uint64_t seed) {
    SamplerParams q = p;
    q.seed = seed;
    Sampler s = Make(q, 1000);
    std::vector<int32_t> out;
    for (int i = 0; i < 200; ++i) {
      out.push_back(Draw(s, logits));
      s.Accept(out.back());
    }
    return out;
  };
  CHECK(run(1234) == run(1234));
  CHECK(run(1234) != run(1235));
}

TEST_CASE("state save/restore continues the same sequence", "[sampler]") {
  SamplerParams p{.temperature = 1.0f,
                  .repetition_penalty = 1.3f,
                  .frequency_penalty = 0.2f,
                  .penalty_last_n = 8,
                  .seed = 99,
                  .logit_bias = {}};
  std::vector<float> logits(300);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = std::cos(static_cast<float>(i)) * 2.0f;
  Sampler a = Make(p, 300);
  for (int i = 0; i < 37; ++i) a.Accept(Draw(a, logits));
  const std::vector<uint8_t> blob = a.SaveState();
  std::vector<int32_t> rest_a;
  for (int i = 0; i < 50; ++i) rest_a.push_back(Draw(a, logits)), a.Accept(rest_a.back());

  Sampler b = Make(p, 300);  // fresh, other history
  b.Accept(5);
  REQUIRE(b.LoadState(blob).ok());
  std::vector<int32_t> rest_b;
  for (int i = 0; i < 50; ++i) rest_b.push_back(Draw(b, logits)), b.Accept(rest_b.back());
  CHECK(rest_a == rest_b);

  // Malformed blobs are rejected and leave the sampler usable.
  std::vector<uint8_t> bad = blob;
  bad[0] ^= 1;
  CHECK(b.LoadState(bad).code() == StatusCode::kInvalidArgument);
  CHECK(b.LoadState(std::span<const uint8_t>(blob.data(), blob.size() - 1)).code() ==
        StatusCode::kInvalidArgument);
  Sampler small = Make(SamplerParams{.penalty_last_n = 2, .logit_bias = {}}, 300);
  CHECK(small.LoadState(blob).code() == StatusCode::kInvalidArgument);
  Sampler tiny_vocab = Make(p, 3);
  CHECK(tiny_vocab.LoadState(blob).code() == StatusCode::kInvalidArgument);
  CHECK(Draw(b, logits) >= 0);
}

// penalty_last_n = INT32_MAX ("the whole conversation") used to allocate and zero 8 GiB up front;
// the window's storage now grows with the accepted tokens. Behaviour equals a window as long as
// the history.
TEST_CASE("a huge penalty window costs what the history holds", "[sampler][hostile]") {
  SamplerParams huge{.temperature = 0.0f,
                     .repetition_penalty = 2.0f,
                     .penalty_last_n = INT32_MAX,
                     .logit_bias = {}};
  SamplerParams exact = huge;
  exact.penalty_last_n = 5;
  Sampler a = Make(huge, 4), b = Make(exact, 4);
  const std::vector<float> logits = {3.0f, 2.0f, 1.5f, -1.5f};
  for (int i = 0; i < 5; ++i) {
    const int32_t x = Draw(a, logits);
    CHECK(x == Draw(b, logits));
    a.Accept(x);
    b.Accept(x);
  }
  CHECK(a.SaveState() == b.SaveState());
  // Save/restore into another huge-window sampler, and Reset, keep working.
  Sampler c = Make(huge, 4);
  REQUIRE(c.LoadState(a.SaveState()).ok());
  CHECK(Draw(c, logits) == Draw(a, logits));
  a.Reset();
  CHECK(Draw(a, logits) == 0);
  // The sliding window is unchanged for small windows: 3 slots, 7 tokens.
  Sampler w = Make(
      SamplerParams{
          .temperature = 0.0f, .repetition_penalty = 1e6f, .penalty_last_n = 3, .logit_bias = {}},
      8);
  for (int32_t id : {0, 1, 2, 3, 4, 5, 6}) w.Accept(id);
  const std::vector<float> flat = {1, 1, 1, 1, 1, 1, 1, 0.5f};
  CHECK(Draw(w, flat) == 0);  // 4, 5, 6 are penalised; 0 is the first unpenalised maximum
}

TEST_CASE("invalid parameters are rejected", "[sampler]") {
  CHECK(Sampler::Create({}, 0).status().code() == StatusCode::kInvalidArgument);
  CHECK(Sampler::Create({.top_p = 1.5f, .logit_bias = {}}, 10).status().code() ==
        StatusCode::kInvalidArgument);
  CHECK(Sampler::Create({.min_p = -0.1f, .logit_bias = {}}, 10).status().code() ==
        StatusCode::kInvalidArgument);
  CHECK(Sampler::Create({.repetition_penalty = 0.0f, .logit_bias = {}}, 10).status().code() ==
        StatusCode::kInvalidArgument);
  CHECK(Sampler::Create({.temperature = NAN, .logit_bias = {}}, 10).status().code() ==
        StatusCode::kInvalidArgument);
  CHECK(Sampler::Create({.penalty_last_n = -1, .logit_bias = {}}, 10).status().code() ==
        StatusCode::kInvalidArgument);
}

TEST_CASE("stop strings hold back possible prefixes and cut at the match", "[sampler]") {
  StopStrings stop({"</answer>", "STOP"});
  std::string out;
  CHECK_FALSE(stop.Push("Hello </ans", &out));
  CHECK(out == "Hello ");  // "</ans" might start "</answer>"
  CHECK_FALSE(stop.Push("wer? no", &out));
  CHECK(out == "Hello </answer? no");
  CHECK_FALSE(stop.Push(" ST", &out));
  CHECK(out == "Hello </answer? no ");
  CHECK(stop.Push("OP and more", &out));
  CHECK(out == "Hello </answer? no ");
  CHECK(stop.matched() == "STOP");
  CHECK(stop.stopped());
  CHECK(stop.Push("ignored", &out));
  stop.Flush(&out);
  CHECK(out == "Hello </answer? no ");

  StopStrings tail({"###"});
  std::string t;
  CHECK_FALSE(tail.Push("a ##", &t));
  CHECK(t == "a ");
  tail.Flush(&t);  // generation ended for another reason: release the held text
  CHECK(t == "a ##");

  StopStrings none;
  std::string n;
  CHECK_FALSE(none.Push("anything", &n));
  CHECK(n == "anything");
}

}  // namespace
}  // namespace qwenrt

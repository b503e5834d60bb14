// Token sampling from logits: repetition / presence / frequency penalties over a window of recent
// tokens, top-k, top-p, min-p, temperature and a seeded, serialisable random draw; plus stop
// strings. Stages run in llama.cpp's default order (penalties -> top-k -> top-p -> min-p ->
// temperature -> draw), so top-p and min-p see the untempered distribution; temperature <= 0 is
// greedy. Chat markup and EOG policy live in the chat layer.
//
// Thread safety: one thread per Sampler at a time. No allocation per token: all buffers are sized
// for the vocabulary at creation.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace qwenrt {

struct SamplerParams {
  float temperature = 1.0f;  // <= 0: greedy (argmax after penalties and bans)
  int32_t top_k = 0;         // keep the k most likely; <= 0: off
  float top_p = 1.0f;        // keep the smallest set with probability >= p; >= 1: off
  float min_p = 0.0f;        // drop tokens with p < min_p * p_max; <= 0: off
  float repetition_penalty =
      1.0f;  // logit / rp if > 0 else logit * rp, for tokens in the window; 1: off
  float presence_penalty = 0.0f;   // logit -= presence for tokens in the window
  float frequency_penalty = 0.0f;  // logit -= frequency * count in the window
  int32_t penalty_last_n = 64;     // window of accepted tokens the penalties look at; 0: off
  uint64_t seed = 0;
  // Added to the logits before every other stage (OpenAI `logit_bias`): (token id, bias).
  std::vector<std::pair<int32_t, float>> logit_bias;
};

// xoshiro256** seeded through splitmix64: small, fast, and its whole state is 32 bytes.
class Rng {
 public:
  explicit Rng(uint64_t seed = 0) { Seed(seed); }
  void Seed(uint64_t seed);
  uint64_t Next();
  // Uniform in [0, 1) with 53 random bits.
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  uint64_t state[4];
};

class Sampler {
 public:
  // INVALID_ARGUMENT for n_vocab <= 0, negative/NaN parameters, top_p/min_p outside [0, 1],
  // repetition_penalty <= 0, penalty_last_n < 0, or a logit_bias id outside the vocabulary.
  static StatusOr<Sampler> Create(const SamplerParams& params, int32_t n_vocab);

  // Tokens that must never be sampled (e.g. Tokenizer::unused_ids()); replaces the previous set.
  // INVALID_ARGUMENT for ids outside [0, n_vocab).
  Status SetBanned(std::span<const int32_t> ids);

  // Draws a token from `logits` [n_vocab] (not modified). `allowed` (null = all) is a bit set
  // [ceil(n_vocab/32)] applied after the penalties and before every other stage (a constraint's
  // mask). INVALID_ARGUMENT when the size differs from n_vocab, INTERNAL when every token is
  // banned, masked or -inf/NaN. Does not Accept the token.
  StatusOr<int32_t> Sample(std::span<const float> logits, const uint32_t* allowed = nullptr);
  // Records a token (sampled or forced, e.g. the prompt) in the penalty window. Ids outside the
  // vocabulary are ignored.
  void Accept(int32_t id);
  // Clears the penalty window and reseeds with params().seed.
  void Reset();
  // Clears the penalty window only (the random sequence continues).
  void ClearWindow();

  // RNG state and penalty window as bytes (versioned), so that a saved session continues the
  // same random sequence. LoadState: INVALID_ARGUMENT for a blob that is malformed, from another
  // version, or whose window does not fit this sampler's vocabulary / penalty_last_n.
  std::vector<uint8_t> SaveState() const;
  Status LoadState(std::span<const uint8_t> blob);

  const SamplerParams& params() const { return params_; }
  int32_t n_vocab() const { return n_vocab_; }

 private:
  struct Candidate {
    float logit;
    int32_t id;
  };

  Sampler(const SamplerParams& params, int32_t n_vocab);
  // True when a penalty parameter is set and the window holds tokens.
  bool PenaltiesApply() const;
  void ApplyPenalties();
  // Greedy with no bias or penalty to apply (Sample's fast path).
  StatusOr<int32_t> Argmax(std::span<const float> logits, const uint32_t* allowed) const;
  // Makes cand_[0, m) the m most likely candidates of cand_[0, n_cand_), sorted descending.
  void SortTop(size_t m);

  SamplerParams params_;
  int32_t n_vocab_;
  Rng rng_;
  std::vector<Candidate> cand_;  // [V] working set, first n_cand_ live
  size_t n_cand_ = 0;
  size_t n_sorted_ = 0;          // cand_[0, n_sorted_) is sorted descending and is the top
  std::vector<uint8_t> banned_;  // [V]
  std::vector<uint8_t> biased_;  // [V]: 1 for the ids params_.logit_bias names
  bool finite_bias_ = true;      // every bias finite (the greedy fast path's condition)
  std::vector<int32_t>
      window_;  // ring buffer of accepted ids, grown up to [penalty_last_n] as tokens arrive
  size_t window_size_ = 0, window_head_ = 0;  // head = index of the oldest entry
  std::vector<int32_t> counts_;               // [V] occurrences in the window
  std::vector<float> probs_;                  // [V] scratch
};

// Watches generated text for stop strings. Push feeds newly generated (complete UTF-8) text and
// appends to *emit what can be shown now: text that might be the start of a stop string is held
// back until it is decided. Once a stop string appears, it and everything after it are dropped and
// Push returns true.
class StopStrings {
 public:
  StopStrings() = default;
  explicit StopStrings(std::vector<std::string> stops);

  bool Push(std::string_view text, std::string* emit);
  // End of generation: releases the held-back text.
  void Flush(std::string* emit);
  bool stopped() const { return stopped_; }
  // The stop string that matched (empty if none).
  const std::string& matched() const { return matched_; }
  void Reset();

 private:
  std::vector<std::string> stops_;
  std::string held_;
  std::string matched_;
  bool stopped_ = false;
};

}  // namespace qwenrt

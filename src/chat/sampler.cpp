// Samplers (see sampler.h). Every stage works in place on `cand_`, a preallocated [V] array of
// (logit, id); the top-p stage sorts only as much of it as the nucleus needs.
#include "chat/sampler.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <new>

#include "base/guard_alloc.h"

namespace qwenrt {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr uint32_t kStateMagic = 0x504D5351;  // "QSMP"
constexpr uint32_t kStateVersion = 1;

uint64_t SplitMix64(uint64_t* x) {
  uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

template <typename T>
void Put(std::vector<uint8_t>* out, T v) {
  const size_t at = out->size();
  out->resize(at + sizeof(T));
  std::memcpy(out->data() + at, &v, sizeof(T));
}

template <typename T>
bool Get(std::span<const uint8_t> in, size_t* pos, T* v) {
  if (in.size() - *pos < sizeof(T)) return false;
  std::memcpy(v, in.data() + *pos, sizeof(T));
  *pos += sizeof(T);
  return true;
}

}  // namespace

void Rng::Seed(uint64_t seed) {
  uint64_t x = seed;
  for (uint64_t& s : state) s = SplitMix64(&x);
}

uint64_t Rng::Next() {
  const uint64_t result = Rotl(state[1] * 5, 7) * 9;
  const uint64_t t = state[1] << 17;
  state[2] ^= state[0];
  state[3] ^= state[1];
  state[1] ^= state[2];
  state[0] ^= state[3];
  state[2] ^= t;
  state[3] = Rotl(state[3], 45);
  return result;
}

StatusOr<Sampler> Sampler::Create(const SamplerParams& p, int32_t n_vocab) {
  if (n_vocab <= 0) return InvalidArgument("sampler: n_vocab must be positive, got {}", n_vocab);
  if (std::isnan(p.temperature)) return InvalidArgument("sampler: temperature is NaN");
  if (!(p.top_p >= 0.0f && p.top_p <= 1.0f))
    return InvalidArgument("sampler: top_p {} is outside [0, 1]", p.top_p);
  if (!(p.min_p >= 0.0f && p.min_p <= 1.0f))
    return InvalidArgument("sampler: min_p {} is outside [0, 1]", p.min_p);
  if (!(p.repetition_penalty > 0.0f) || !std::isfinite(p.repetition_penalty)) {
    return InvalidArgument("sampler: repetition_penalty must be > 0, got {}", p.repetition_penalty);
  }
  if (!std::isfinite(p.presence_penalty) || !std::isfinite(p.frequency_penalty)) {
    return InvalidArgument("sampler: presence/frequency penalties must be finite");
  }
  if (p.penalty_last_n < 0)
    return InvalidArgument("sampler: penalty_last_n must be >= 0, got {}", p.penalty_last_n);
  for (const auto& [id, bias] : p.logit_bias) {
    if (id < 0 || id >= n_vocab)
      return InvalidArgument("sampler: logit_bias id {} outside [0, {})", id, n_vocab);
    if (std::isnan(bias)) return InvalidArgument("sampler: logit_bias for {} is NaN", id);
  }
  return GuardAlloc([&]() -> StatusOr<Sampler> { return Sampler(p, n_vocab); },
                    "sampler buffers for {} tokens", n_vocab);
}

Sampler::Sampler(const SamplerParams& params, int32_t n_vocab)
    : params_(params),
      n_vocab_(n_vocab),
      rng_(params.seed),
      cand_(static_cast<size_t>(n_vocab)),
      banned_(static_cast<size_t>(n_vocab), 0),
      biased_(static_cast<size_t>(n_vocab), 0),
      counts_(static_cast<size_t>(n_vocab), 0),
      probs_(static_cast<size_t>(n_vocab)) {
  for (const auto& [id, bias] : params_.logit_bias) {
    biased_[static_cast<size_t>(id)] = 1;
    finite_bias_ = finite_bias_ && std::isfinite(bias);
  }
}

Status Sampler::SetBanned(std::span<const int32_t> ids) {
  for (int32_t id : ids) {
    if (id < 0 || id >= n_vocab_)
      return InvalidArgument("sampler: banned id {} outside [0, {})", id, n_vocab_);
  }
  std::fill(banned_.begin(), banned_.end(), 0);
  for (int32_t id : ids) banned_[static_cast<size_t>(id)] = 1;
  return OkStatus();
}

// The window's storage grows with the tokens accepted, up to penalty_last_n: a huge
// penalty_last_n (INT32_MAX: "the whole conversation") costs what the conversation holds, not 8 GiB
// up front. Until the window is full, head is 0 and window_.size() == window_size_, so the ring
// indexing `(head + i) % window_.size()` is the same before and after it fills.
void Sampler::Accept(int32_t id) {
  if (id < 0 || id >= n_vocab_ || params_.penalty_last_n == 0) return;
  // head != 0 below capacity only after an allocation failure: keep sliding then.
  bool evict = window_size_ == static_cast<size_t>(params_.penalty_last_n) || window_head_ != 0;
  if (!evict) {
    try {
      window_.push_back(id);
      ++window_size_;
    } catch (const std::bad_alloc&) {
      evict = !window_.empty();  // out of memory: the window stops growing and slides instead
      if (!evict) return;
    }
  }
  if (evict) {
    --counts_[static_cast<size_t>(window_[window_head_])];
    window_[window_head_] = id;
    window_head_ = (window_head_ + 1) % window_.size();
  }
  ++counts_[static_cast<size_t>(id)];
}

void Sampler::ClearWindow() {
  for (size_t i = 0; i < window_size_; ++i)
    --counts_[static_cast<size_t>(window_[(window_head_ + i) % window_.size()])];
  window_size_ = window_head_ = 0;
  window_.clear();
}

void Sampler::Reset() {
  ClearWindow();
  rng_.Seed(params_.seed);
}

bool Sampler::PenaltiesApply() const {
  const bool any = params_.repetition_penalty != 1.0f || params_.presence_penalty != 0.0f ||
                   params_.frequency_penalty != 0.0f;
  return any && window_size_ > 0;
}

// Penalties use cand_ while it is still indexed by id (cand_[i].id == i).
void Sampler::ApplyPenalties() {
  if (!PenaltiesApply()) return;
  for (size_t i = 0; i < window_size_; ++i) {
    const int32_t id = window_[(window_head_ + i) % window_.size()];
    const int32_t count = counts_[static_cast<size_t>(id)];
    if (count <= 0) continue;  // already applied (a repeated id in the window)
    float& logit = cand_[static_cast<size_t>(id)].logit;
    if (logit != kNegInf) {
      logit =
          logit <= 0.0f ? logit * params_.repetition_penalty : logit / params_.repetition_penalty;
      logit -= static_cast<float>(count) * params_.frequency_penalty + params_.presence_penalty;
    }
    counts_[static_cast<size_t>(id)] = -count;  // mark as applied, restored below
  }
  for (size_t i = 0; i < window_size_; ++i) {
    int32_t& c = counts_[static_cast<size_t>(window_[(window_head_ + i) % window_.size()])];
    if (c < 0) c = -c;
  }
}

void Sampler::SortTop(size_t m) {
  m = std::min(m, n_cand_);
  if (m <= n_sorted_) return;
  const auto desc = [](const Candidate& a, const Candidate& b) {
    return a.logit != b.logit ? a.logit > b.logit : a.id < b.id;
  };
  std::partial_sort(cand_.begin() + static_cast<ptrdiff_t>(n_sorted_),
                    cand_.begin() + static_cast<ptrdiff_t>(m),
                    cand_.begin() + static_cast<ptrdiff_t>(n_cand_), desc);
  n_sorted_ = m;
}

// The token the full pipeline's greedy stage picks when no penalty applies: the first (lowest id)
// maximum among the tokens not banned, masked, NaN or -inf, as SortTop(1) orders them. One pass
// over the logits instead of three over the candidate array (a 248k vocabulary: ~0.1 ms, not ~0.5);
// the few biased ids are skipped there and scored apart, their bias added in the pipeline's order.
StatusOr<int32_t> Sampler::Argmax(std::span<const float> logits, const uint32_t* allowed) const {
  const auto is_allowed = [allowed](int32_t i) {
    return allowed == nullptr || ((allowed[i >> 5] >> (i & 31)) & 1u);
  };
  int32_t best = -1;
  float best_logit = kNegInf;
  for (int32_t i = 0; i < n_vocab_; ++i) {
    const float l = logits[static_cast<size_t>(i)];
    if (!(l > best_logit)) continue;  // NaN and -inf never pass
    if (banned_[static_cast<size_t>(i)] || biased_[static_cast<size_t>(i)] || !is_allowed(i))
      continue;
    best = i;
    best_logit = l;
  }
  const auto& bias = params_.logit_bias;
  for (size_t k = 0; k < bias.size(); ++k) {
    const int32_t id = bias[k].first;
    bool seen = false;
    for (size_t e = 0; e < k && !seen; ++e) seen = bias[e].first == id;
    if (seen || !is_allowed(id)) continue;
    const float l = logits[static_cast<size_t>(id)];
    float v = banned_[static_cast<size_t>(id)] || std::isnan(l) ? kNegInf : l;
    for (size_t e = k; e < bias.size(); ++e) {
      if (bias[e].first == id) v += bias[e].second;
    }
    if (v != kNegInf && (v > best_logit || (v == best_logit && id < best))) {
      best = id;
      best_logit = v;
    }
  }
  if (best < 0) return InternalError("sampler: every token is banned or has logit -inf");
  return best;
}

StatusOr<int32_t> Sampler::Sample(std::span<const float> logits, const uint32_t* allowed) {
  if (logits.size() != static_cast<size_t>(n_vocab_)) {
    return InvalidArgument("sampler: got {} logits for a vocabulary of {}", logits.size(),
                           n_vocab_);
  }
  const bool greedy = params_.temperature <= 0.0f || params_.top_k == 1;
  if (greedy && finite_bias_ && !PenaltiesApply()) return Argmax(logits, allowed);
  for (int32_t i = 0; i < n_vocab_; ++i) {
    const float l = logits[static_cast<size_t>(i)];
    cand_[static_cast<size_t>(i)] = {banned_[static_cast<size_t>(i)] || std::isnan(l) ? kNegInf : l,
                                     i};
  }
  for (const auto& [id, bias] : params_.logit_bias) cand_[static_cast<size_t>(id)].logit += bias;
  ApplyPenalties();
  if (allowed != nullptr) {
    for (int32_t i = 0; i < n_vocab_; ++i) {
      if (!((allowed[i >> 5] >> (i & 31)) & 1u)) cand_[static_cast<size_t>(i)].logit = kNegInf;
    }
  }
  // Drop impossible tokens so that no later stage has to care.
  n_cand_ = 0;
  for (int32_t i = 0; i < n_vocab_; ++i) {
    if (cand_[static_cast<size_t>(i)].logit != kNegInf)
      cand_[n_cand_++] = cand_[static_cast<size_t>(i)];
  }
  if (n_cand_ == 0) return InternalError("sampler: every token is banned or has logit -inf");
  n_sorted_ = 0;

  if (greedy) {
    SortTop(1);
    return cand_[0].id;
  }
  // top-k
  if (params_.top_k > 0 && static_cast<size_t>(params_.top_k) < n_cand_) {
    SortTop(static_cast<size_t>(params_.top_k));
    n_cand_ = static_cast<size_t>(params_.top_k);
  }
  // top-p: the smallest prefix of the sorted candidates whose probability reaches p (>= 1 kept).
  if (params_.top_p < 1.0f) {
    SortTop(1);
    const float max_logit = cand_[0].logit;
    double total = 0.0;
    for (size_t i = 0; i < n_cand_; ++i)
      total += std::exp(static_cast<double>(cand_[i].logit - max_logit));
    const double target = static_cast<double>(params_.top_p) * total;
    double cum = 0.0;
    size_t keep = n_cand_;
    bool found = false;
    for (size_t i = 0, m = 64; i < n_cand_ && !found; m *= 4) {
      SortTop(m);  // grow the sorted prefix only as far as the nucleus reaches
      for (; i < n_sorted_; ++i) {
        cum += std::exp(static_cast<double>(cand_[i].logit - max_logit));
        if (cum >= target) {
          keep = i + 1;
          found = true;
          break;
        }
      }
    }
    n_cand_ = std::max<size_t>(1, keep);
    n_sorted_ = std::min(n_sorted_, n_cand_);
  }
  // min-p: p_i >= min_p * p_max  <=>  logit_i >= max_logit + log(min_p).
  if (params_.min_p > 0.0f) {
    float max_logit = kNegInf;
    for (size_t i = 0; i < n_cand_; ++i) max_logit = std::max(max_logit, cand_[i].logit);
    const float threshold = max_logit + std::log(params_.min_p);
    size_t kept = 0;
    for (size_t i = 0; i < n_cand_; ++i) {
      if (cand_[i].logit >= threshold) cand_[kept++] = cand_[i];  // keeps the sorted prefix sorted
    }
    n_cand_ = kept;
    n_sorted_ = std::min(n_sorted_, n_cand_);
  }
  // temperature + draw from the softmax.
  float max_logit = kNegInf;
  for (size_t i = 0; i < n_cand_; ++i) max_logit = std::max(max_logit, cand_[i].logit);
  const float inv_t = 1.0f / params_.temperature;
  double total = 0.0;
  for (size_t i = 0; i < n_cand_; ++i) {
    const float p = std::exp((cand_[i].logit - max_logit) * inv_t);
    probs_[i] = p;
    total += p;
  }
  const double u = rng_.Uniform() * total;
  double cum = 0.0;
  for (size_t i = 0; i < n_cand_; ++i) {
    cum += probs_[i];
    if (u < cum) return cand_[i].id;
  }
  // Rounding left u at the very top: the last candidate with non-zero probability.
  for (size_t i = n_cand_; i-- > 0;) {
    if (probs_[i] > 0.0f) return cand_[i].id;
  }
  return cand_[0].id;
}

std::vector<uint8_t> Sampler::SaveState() const {
  std::vector<uint8_t> out;
  Put(&out, kStateMagic);
  Put(&out, kStateVersion);
  for (uint64_t s : rng_.state) Put(&out, s);
  Put(&out, static_cast<uint32_t>(window_size_));
  for (size_t i = 0; i < window_size_; ++i) Put(&out, window_[(window_head_ + i) % window_.size()]);
  return out;
}

Status Sampler::LoadState(std::span<const uint8_t> blob) {
  size_t pos = 0;
  uint32_t magic = 0, version = 0, n = 0;
  Rng rng;
  if (!Get(blob, &pos, &magic) || magic != kStateMagic)
    return InvalidArgument("sampler state: bad magic");
  if (!Get(blob, &pos, &version) || version != kStateVersion) {
    return InvalidArgument("sampler state: version {} (expected {})", version, kStateVersion);
  }
  for (uint64_t& s : rng.state) {
    if (!Get(blob, &pos, &s)) return InvalidArgument("sampler state: truncated");
  }
  if (!Get(blob, &pos, &n)) return InvalidArgument("sampler state: truncated");
  if (n > static_cast<uint32_t>(params_.penalty_last_n)) {
    return InvalidArgument("sampler state: window of {} tokens, this sampler keeps {}", n,
                           params_.penalty_last_n);
  }
  if (blob.size() - pos != static_cast<size_t>(n) * sizeof(int32_t)) {
    return InvalidArgument("sampler state: {} bytes for a window of {} tokens", blob.size() - pos,
                           n);
  }
  std::vector<int32_t> ids(n);
  for (int32_t& id : ids) {
    Get(blob, &pos, &id);
    if (id < 0 || id >= n_vocab_)
      return InvalidArgument("sampler state: token {} outside the vocabulary", id);
  }
  Reset();
  for (int32_t id : ids) Accept(id);
  rng_ = rng;
  return OkStatus();
}

StopStrings::StopStrings(std::vector<std::string> stops) {
  for (std::string& s : stops) {
    if (!s.empty()) stops_.push_back(std::move(s));
  }
}

bool StopStrings::Push(std::string_view text, std::string* emit) {
  if (stopped_) return true;
  held_.append(text);
  size_t first = std::string::npos;
  for (const std::string& s : stops_) {
    const size_t at = held_.find(s);
    if (at < first) {
      first = at;
      matched_ = s;
    }
  }
  if (first != std::string::npos) {
    emit->append(held_, 0, first);
    held_.clear();
    stopped_ = true;
    return true;
  }
  // Hold back the longest suffix that is a proper prefix of some stop string.
  size_t keep = 0;
  for (const std::string& s : stops_) {
    for (size_t len = std::min(s.size() - 1, held_.size()); len > keep; --len) {
      if (held_.compare(held_.size() - len, len, s, 0, len) == 0) {
        keep = len;
        break;
      }
    }
  }
  emit->append(held_, 0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return false;
}

void StopStrings::Flush(std::string* emit) {
  if (!stopped_) emit->append(held_);
  held_.clear();
}

void StopStrings::Reset() {
  held_.clear();
  matched_.clear();
  stopped_ = false;
}

}  // namespace qwenrt

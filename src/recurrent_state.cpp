// RecurrentState allocation, reset and copies.
#include "recurrent_state.h"

#include <algorithm>
#include <new>

namespace qwenrt {

StatusOr<RecurrentState> RecurrentState::Create(const ModelConfig& config) {
  RecurrentState s;
  s.conv_floats_ = config.conv_channels() * (config.conv_kernel - 1);
  s.ssm_floats_ = config.ssm_hv * config.ssm_dv * config.ssm_dk;
  const int64_t n = config.n_gdn_layers();
  try {
    s.conv_.assign(n, std::vector<float>(static_cast<size_t>(s.conv_floats_), 0.0f));
    s.ssm_.assign(n, std::vector<float>(static_cast<size_t>(s.ssm_floats_), 0.0f));
  } catch (const std::bad_alloc&) {
    return OutOfMemory("out of memory allocating the recurrent state ({} bytes)",
                       static_cast<size_t>(n * (s.conv_floats_ + s.ssm_floats_)) * sizeof(float));
  }
  return s;
}

RecurrentState::RecurrentState(RecurrentState&& other) noexcept
    : conv_floats_(other.conv_floats_), ssm_floats_(other.ssm_floats_) {
  other.Sync();
  conv_ = std::move(other.conv_);
  ssm_ = std::move(other.ssm_);
  lineage_ = std::move(other.lineage_);
}

RecurrentState& RecurrentState::operator=(RecurrentState&& other) noexcept {
  if (this == &other) return *this;
  ForgetPending();
  other.Sync();
  conv_floats_ = other.conv_floats_;
  ssm_floats_ = other.ssm_floats_;
  conv_ = std::move(other.conv_);
  ssm_ = std::move(other.ssm_);
  lineage_ = std::move(other.lineage_);
  return *this;
}

RecurrentState::~RecurrentState() { ForgetPending(); }

void RecurrentState::SetPending(StateMirror* mirror) const { pending_ = mirror; }

void RecurrentState::Sync() const {
  if (pending_ == nullptr) return;
  StateMirror* m = pending_;
  pending_ = nullptr;  // before Pull, so Pull's own accesses do not recurse
  m->Pull(const_cast<RecurrentState&>(*this));
}

void RecurrentState::ForgetPending() {
  if (pending_ == nullptr) return;
  StateMirror* m = pending_;
  pending_ = nullptr;
  m->Forget(*this);
}

void RecurrentState::Reset() {
  ForgetPending();  // the device contents are replaced: no need to fetch them
  lineage_.Renew();
  for (auto& c : conv_) std::fill(c.begin(), c.end(), 0.0f);
  for (auto& s : ssm_) std::fill(s.begin(), s.end(), 0.0f);
}

size_t RecurrentState::bytes() const {
  return conv_.size() * static_cast<size_t>(conv_floats_ + ssm_floats_) * sizeof(float);
}

StatusOr<RecurrentState> RecurrentState::Copy() const {
  Sync();
  RecurrentState c;
  c.conv_floats_ = conv_floats_;
  c.ssm_floats_ = ssm_floats_;
  try {
    c.conv_ = conv_;
    c.ssm_ = ssm_;
  } catch (const std::bad_alloc&) {
    return OutOfMemory("out of memory copying the recurrent state ({} bytes)", bytes());
  }
  return c;
}

void RecurrentState::CopyFrom(const RecurrentState& other) {
  other.Sync();
  ForgetPending();
  lineage_.Renew();
  for (size_t g = 0; g < conv_.size() && g < other.conv_.size(); ++g) {
    std::copy(other.conv_[g].begin(), other.conv_[g].end(), conv_[g].begin());
    std::copy(other.ssm_[g].begin(), other.ssm_[g].end(), ssm_[g].begin());
  }
}

}  // namespace qwenrt

// RecurrentState allocation, reset and copies.
#include "model/recurrent_state.h"

#include <algorithm>
#include <new>
#include <utility>

namespace qwenrt {

StatusOr<RecurrentState> RecurrentState::Create(const ModelConfig& config, bool mtp) {
  if (mtp && config.n_nextn == 0)
    return InvalidArgument("recurrent state: MTP asked for, but the model has no MTP block");
  RecurrentState s;
  s.conv_floats_ = ConvFloats(config);
  s.ssm_floats_ = SsmFloats(config);
  const int64_t n = config.n_gdn_layers();
  try {
    s.conv_.assign(n, std::vector<float>(static_cast<size_t>(s.conv_floats_), 0.0f));
    s.ssm_.assign(n, std::vector<float>(static_cast<size_t>(s.ssm_floats_), 0.0f));
    if (mtp) s.mtp_hidden_.assign(static_cast<size_t>(config.n_embd), 0.0f);
  } catch (const std::bad_alloc&) {
    return OutOfMemory("out of memory allocating the recurrent state ({} bytes)",
                       static_cast<size_t>(n * (s.conv_floats_ + s.ssm_floats_)) * sizeof(float));
  }
  return s;
}

RecurrentState::RecurrentState(RecurrentState&& other) noexcept { *this = std::move(other); }

RecurrentState& RecurrentState::operator=(RecurrentState&& other) noexcept {
  if (this == &other) return *this;
  ForgetPending();
  conv_floats_ = other.conv_floats_;
  ssm_floats_ = other.ssm_floats_;
  conv_ = std::move(other.conv_);
  ssm_ = std::move(other.ssm_);
  mtp_hidden_ = std::move(other.mtp_hidden_);
  lineage_ = std::move(other.lineage_);
  pending_ = std::exchange(other.pending_, nullptr);
  if (pending_ != nullptr) pending_->Moved(other, *this);
  return *this;
}

RecurrentState::~RecurrentState() { ForgetPending(); }

Status RecurrentState::Fetch() {
  if (pending_ == nullptr) return OkStatus();
  return pending_->Fetch(*this);  // clears the mark, also on failure (the buffers are NaN then)
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
  for (auto& c : conv_) c.assign(static_cast<size_t>(conv_floats_), 0.0f);  // (a device-made copy
  for (auto& s : ssm_) s.assign(static_cast<size_t>(ssm_floats_), 0.0f);    //  may have none yet)
  std::fill(mtp_hidden_.begin(), mtp_hidden_.end(), 0.0f);
}

size_t RecurrentState::bytes() const {
  return (conv_.size() * static_cast<size_t>(conv_floats_ + ssm_floats_) + mtp_hidden_.size()) *
         sizeof(float);
}

StatusOr<RecurrentState> RecurrentState::Copy() const {
  RecurrentState c;
  c.conv_floats_ = conv_floats_;
  c.ssm_floats_ = ssm_floats_;
  try {
    c.mtp_hidden_ = mtp_hidden_;  // host-only
    if (pending_ != nullptr) {    // host buffers left empty: a device copy needs none
      c.conv_.resize(conv_.size());
      c.ssm_.resize(ssm_.size());
      QWENRT_RETURN_IF_ERROR(pending_->Clone(*this, c));
      return c;
    }
    c.conv_ = conv_;
    c.ssm_ = ssm_;
  } catch (const std::bad_alloc&) {
    return OutOfMemory("out of memory copying the recurrent state ({} bytes)", bytes());
  }
  return c;
}

Status RecurrentState::CopyFrom(const RecurrentState& other) {
  if (this == &other) return OkStatus();
  if (pending_ != nullptr && pending_ != other.pending_) ForgetPending();
  lineage_.Renew();
  if (mtp_hidden_.size() == other.mtp_hidden_.size())  // host-only; same shapes required
    std::copy(other.mtp_hidden_.begin(), other.mtp_hidden_.end(), mtp_hidden_.begin());
  if (other.pending_ != nullptr) return other.pending_->Clone(other, *this);
  ForgetPending();
  for (size_t g = 0; g < conv_.size() && g < other.conv_.size(); ++g) {
    std::copy(other.conv_[g].begin(), other.conv_[g].end(), host_conv(g));
    std::copy(other.ssm_[g].begin(), other.ssm_[g].end(), host_ssm(g));
  }
  return OkStatus();
}

}  // namespace qwenrt

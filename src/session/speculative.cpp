// Speculative decoding in a Session: Verify (one forward pass over the next token and its drafts,
// then the longest agreeing prefix kept, the recurrent state rebuilt from what the pass recorded)
// and the speculative Generate loop on top of it. docs/speculative.md explains the design.
#include "session/speculative.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "base/guard_alloc.h"
#include "session/draft_policy.h"
#include "session/session.h"

namespace qwenrt {
namespace {

bool IsCancelled(const std::atomic<bool>* flag) {
  return flag != nullptr && flag->load(std::memory_order_relaxed);
}

}  // namespace

Status Session::PrepareVerify(int64_t tokens) {
  if (ctx_ == nullptr) QWENRT_RETURN_IF_ERROR(MakeContext());
  // Sized by the longest pass so far (at most kMaxVerifyDraft + 1 tokens), not the largest possible
  // one: a session drafting 3 tokens holds 4 tokens' worth.
  if (!verify_capture_ || verify_capture_->max_tokens < tokens) {
    auto capture = std::make_unique<GdnCapture>();
    QWENRT_RETURN_IF_ERROR(capture->Init(model_->config(), tokens));
    verify_capture_ = std::move(capture);
  }
  const size_t logits = static_cast<size_t>(tokens * n_vocab());
  if (verify_logits_.size() < logits) {
    QWENRT_RETURN_IF_ERROR(GuardAlloc([&] { verify_logits_.resize(logits); },
                                      "Verify: cannot allocate the logits of {} positions",
                                      tokens));
  }
  return OkStatus();
}

size_t Session::verify_bytes() const {
  return (verify_capture_ ? verify_capture_->bytes() : 0) +
         verify_logits_.capacity() * sizeof(float);
}

Status Session::Verify(std::span<const int32_t> tokens, const VerifyChooser& choose,
                       VerifyResult* result, const std::atomic<bool>* cancel) {
  // Everything that can fail is checked or allocated before the pass touches the state.
  const int64_t T = static_cast<int64_t>(tokens.size()), V = n_vocab();
  if (result == nullptr || !choose) return InvalidArgument("Verify: null result or chooser");
  *result = VerifyResult();
  if (T == 0) return InvalidArgument("Verify: no tokens");
  if (T > kMaxVerifyDraft + 1)
    return InvalidArgument("Verify: {} drafts, at most {}", T - 1, kMaxVerifyDraft);
  if (params_.backend == BackendKind::kCuda)
    return Unsupported("Verify: speculative decoding is not verified on the CUDA backend");
  QWENRT_RETURN_IF_ERROR(CheckTokens(tokens));
  if (size() + T > max_context_)
    return ContextFull("Verify: {} tokens after {} exceed the context of {}", T, size(),
                       max_context_);
  if (IsCancelled(cancel)) return Cancelled("Verify cancelled before its pass");
  QWENRT_RETURN_IF_ERROR(PrepareVerify(T));
  QWENRT_RETURN_IF_ERROR(MakeRoom(static_cast<size_t>(T)));
  QWENRT_RETURN_IF_ERROR(kv_.Reserve(size() + T));
  QWENRT_RETURN_IF_ERROR(rec_.Fetch());

  const int64_t n0 = size();
  SequenceStep step{&kv_, &rec_, tokens, true, verify_logits_.data(), OkStatus()};
  step.capture = T > 1 ? verify_capture_.get() : nullptr;  // one token has nothing to reject
  // The MTP draft head follows the pass like any forward call (its rows for all T tokens); a
  // rejection below then moves only its carried row back (MtpKeepPrefix, docs/mtp.md).
  if (mtp_ready()) step.hidden = MtpHiddenRows(tokens.size());
  const Status ran = ForwardBatch(*ctx_, std::span<SequenceStep>(&step, 1));
  if (!ran.ok()) {
    // ForwardBatch validates before it touches kv/rec, and on the host nothing fails after: the
    // session is as before. Should that ever change, fall back as AfterRun does.
    if (kv_.size() != n0) {
      const auto* e = checkpoints_.FindAtOrBefore(n0);
      RestoreTo(e ? e->pos : 0, e ? &e->snapshot.state() : nullptr);
    }
    return ran;
  }
  if (step.hidden != nullptr) MtpCatchUpAfter(*ctx_, tokens);
  const bool mtp_rows = step.hidden != nullptr && mtp_ready();

  // The longest prefix the target agrees with: token i+1 is kept when it is what the target
  // chooses after token i.
  int64_t j = 0;
  int32_t next = -1;
  for (int64_t i = 0;; ++i) {
    const int32_t c = choose(i, verify_logits_.data() + i * V);
    j = i;
    if (c < 0) break;
    if (i + 1 < T && c == tokens[static_cast<size_t>(i + 1)]) continue;
    next = c;
    break;
  }
  const int64_t keep = j + 1;

  // The pass left the state after all T tokens. It is the answer when everything was kept and no
  // periodic checkpoint falls strictly inside the kept tokens; otherwise the state is rebuilt from
  // the copy before the pass, stopping at each checkpoint position as DecodeStep would.
  const int64_t every = params_.checkpoint_every;
  const bool inner_checkpoint = every > 0 && (n0 / every) != ((n0 + keep - 1) / every);
  Status rebuilt = OkStatus();
  if (keep == T && !inner_checkpoint) {
    transcript_.insert(transcript_.end(), tokens.begin(), tokens.end());
    if (every > 0 && size() % every == 0) TakeCheckpoint(turn_, nullptr);
  } else {
    kv_.Truncate(n0 + keep);
    rebuilt = RestoreCaptured(*verify_capture_, rec_);
    int64_t done = 0;
    while (rebuilt.ok() && done < keep) {
      int64_t stop = keep;
      if (every > 0) stop = std::min(stop, ((n0 + done) / every + 1) * every - n0);
      rebuilt = ReplayRecurrent(*ctx_, *verify_capture_, done, stop, rec_);
      if (!rebuilt.ok()) break;
      if (mtp_rows) MtpKeepPrefix(rec_, mtp_rows_.data(), stop);  // before a checkpoint copies it
      transcript_.insert(transcript_.end(), tokens.begin() + done, tokens.begin() + stop);
      done = stop;
      if (every > 0 && size() % every == 0) TakeCheckpoint(turn_, nullptr);
    }
    if (!rebuilt.ok()) {  // not expected on the host: fall back to a state we know
      const auto* e = checkpoints_.FindAtOrBefore(n0);
      RestoreTo(e ? e->pos : 0, e ? &e->snapshot.state() : nullptr);
      return rebuilt;
    }
  }
  std::memcpy(last_logits_.data(), verify_logits_.data() + j * V,
              static_cast<size_t>(V) * sizeof(float));
  has_logits_ = true;
  logits_rows_ = 0;
  result->accepted = j;
  result->next = next;
  return OkStatus();
}

Status Session::GenerateSpeculative(const GenerateOptions& options, std::vector<int32_t>* out,
                                    GenerateReport* report) {
  GenerateReport local;
  GenerateReport& r = report ? *report : local;
  r = GenerateReport();
  if (!options.sampler) return InvalidArgument("Generate: no sampler");
  if (out == nullptr) return InvalidArgument("Generate: null output vector");
  if (!has_logits_) return InvalidArgument("Generate: no logits to sample from (Feed first)");
  if (options.draft == nullptr) return InvalidArgument("Generate: max_draft > 0 needs a draft");
  if (options.max_draft > kMaxVerifyDraft)
    return InvalidArgument("Generate: max_draft {} is over {}", options.max_draft, kMaxVerifyDraft);
  if (params_.backend == BackendKind::kCuda)
    return Unsupported("Generate: speculative decoding is not verified on the CUDA backend");
  const auto t0 = std::chrono::steady_clock::now();
  const int64_t V = n_vocab();
  Status status;
  int64_t sampled = 0;
  // Plain Generate's step before a decode, with its checks in its order: the token after
  // `evaluated` positions, sampled from `logits`, appended to *out; -1 when generation ends here
  // (`status` says why when it is an error).
  const auto sample = [&](const float* logits, int64_t evaluated) -> int32_t {
    if (sampled >= options.max_tokens) return -1;
    if (IsCancelled(options.cancel)) {
      status = Cancelled("Generate cancelled after {} tokens", r.n_sampled);
      return -1;
    }
    const int32_t tok = options.sampler(logits, V);
    if (tok < 0 || tok >= V) {
      status = InvalidArgument("Generate: sampler returned token {} outside [0, {})", tok, V);
      return -1;
    }
    const bool is_stop = std::find(options.stop_tokens.begin(), options.stop_tokens.end(), tok) !=
                         options.stop_tokens.end();
    if (!is_stop && evaluated + 1 > max_context_) {
      status = ContextFull("Generate: context of {} tokens is full", max_context_);
      return -1;
    }
    out->push_back(tok);
    ++r.n_sampled;
    ++sampled;
    if (is_stop) {
      r.hit_stop = true;
      return -1;
    }
    return tok;
  };

  std::vector<int32_t> batch, drafts;
  status = GuardAlloc(
      [&] {
        batch.reserve(static_cast<size_t>(kMaxVerifyDraft + 1));
        drafts.reserve(static_cast<size_t>(kMaxVerifyDraft));
      },
      "Generate: cannot allocate the draft buffers");
  int32_t pending = status.ok() ? sample(last_logits_.data(), size()) : -1;
  while (pending >= 0) {
    // Drafts past max_tokens or the context could never be emitted: not asked for.
    const int64_t want = options.draft_policy != nullptr
                             ? std::min(options.draft_policy->Next(), options.max_draft)
                             : options.max_draft;
    const int64_t k = std::max<int64_t>(
        0, std::min({want, options.max_tokens - sampled, max_context_ - size() - 1}));
    const auto pass_t0 = std::chrono::steady_clock::now();
    drafts.clear();
    if (k > 0) {
      status = options.draft->Draft(*this, pending, k, &drafts);
      if (!status.ok()) break;
    }
    batch.assign(1, pending);
    for (size_t d = 0; d < drafts.size() && static_cast<int64_t>(d) < k; ++d) {
      if (drafts[d] < 0 || drafts[d] >= V) break;
      batch.push_back(drafts[d]);
    }
    r.drafted += static_cast<int64_t>(batch.size()) - 1;
    const int64_t n0 = size();
    // Token i of the batch has just been evaluated (its logits are row i): what plain Generate
    // does after a decode (on_token) and before the next one (sample).
    const VerifyChooser choose = [&](int64_t i, const float* logits) -> int32_t {
      ++r.n_decoded;
      if (options.on_token && !options.on_token(batch[static_cast<size_t>(i)])) return -1;
      return sample(logits, n0 + i + 1);
    };
    VerifyResult vr;
    const Status verified = Verify(batch, choose, &vr, nullptr);
    if (!verified.ok()) {
      status = verified;
      break;
    }
    ++r.verify_passes;
    r.accepted += vr.accepted;
    if (options.draft_policy != nullptr) {
      // Drafts checked: up to the first wrong one, or, where generation ended in the pass (stop,
      // max_tokens), only those accepted.
      const int64_t n_drafts = static_cast<int64_t>(batch.size()) - 1;
      const int64_t checked = vr.next < 0 ? vr.accepted : std::min(vr.accepted + 1, n_drafts);
      options.draft_policy->Record(
          n_drafts, checked, vr.accepted,
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - pass_t0)
              .count());
    }
    options.draft->Accepted(
        *this, std::span<const int32_t>(batch.data(), static_cast<size_t>(vr.accepted + 1)));
    pending = vr.next;
  }
  r.decode_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  Trace(
      fmt::format("decode {} tokens to position {} ({:.1f} ms{}; speculative: {} drafted, {} "
                  "accepted in {} passes){}",
                  r.n_decoded, size(), r.decode_ms, r.hit_stop ? ", stop token" : "", r.drafted,
                  r.accepted, r.verify_passes, status.ok() ? "" : "; " + status.ToString()));
  return status;
}

}  // namespace qwenrt

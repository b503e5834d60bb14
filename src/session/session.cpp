// Session: prefix resume over the transcript, checkpoint placement during prefill, decode loop,
// fork. Saving and loading a session is in session_io.cpp.
#include "session/session.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <new>
#include <optional>
#include <thread>

#include "base/guard_alloc.h"
#include "session/memory_estimate.h"

namespace qwenrt {
namespace {

double MsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

bool IsCancelled(const std::atomic<bool>* flag) {
  return flag != nullptr && flag->load(std::memory_order_relaxed);
}

}  // namespace

const char* MissReasonName(MissReason reason) {
  switch (reason) {
    case MissReason::kNone:
      return "none";
    case MissReason::kEmpty:
      return "empty";
    case MissReason::kNoCheckpoint:
      return "no_checkpoint";
    case MissReason::kEndsInsideTranscript:
      return "ends_inside";
  }
  return "none";
}

std::string FormatFeedLine(const FeedReport& r) {
  const std::string source = r.checkpoint_pos >= 0  ? fmt::format("checkpoint {}", r.checkpoint_pos)
                             : r.reused_tokens == 0 ? std::string("from scratch")
                                                    : std::string("live state");
  return fmt::format("prefill {} tokens from position {} ({}, common prefix {} of {}){}",
                     r.prefilled_tokens, r.reused_tokens, source, r.common_prefix, r.prompt_tokens,
                     r.miss_detail.empty() ? "" : "; miss: " + r.miss_detail);
}

StatusOr<std::unique_ptr<Session>> Session::Create(std::shared_ptr<const Model> model,
                                                   const SessionParams& params) {
  if (!model) return InvalidArgument("Session::Create: null model");
  const ModelConfig& cfg = model->config();
  if (params.ubatch < 1)
    return InvalidArgument("Session: ubatch must be >= 1 (got {})", params.ubatch);
  if (params.n_threads < 0) return InvalidArgument("Session: n_threads must be >= 0");
  if (params.max_context < 0 || params.initial_capacity < 0 || params.checkpoint_tail < 0 ||
      params.checkpoint_every < 0 || params.checkpoint_budget_bytes < -1 ||
      params.memory_limit_bytes < 0)
    return InvalidArgument("Session: negative max_context / initial_capacity / checkpoint setting");
  int64_t max_context = params.max_context > 0 ? params.max_context : cfg.n_ctx_train;
  if (max_context <= 0) return InvalidArgument("Session: the model has no trained context length");
  int64_t initial =
      std::min(max_context, params.initial_capacity > 0 ? params.initial_capacity : 1024);
  if (params.mtp && cfg.n_nextn == 0)
    return InvalidArgument("Session: mtp asked for, but the model has no MTP (next-n) block");
  if (params.mtp && params.backend == BackendKind::kCuda)
    return Unsupported("Session: the CUDA backend does not run the MTP draft head");
  KvCacheOptions kvo;
  kvo.type = params.kv_type.value_or(DefaultKvType(params.backend));
  kvo.page_rows = params.kv_page_rows;
  kvo.mtp = params.mtp;
  if (params.backend == BackendKind::kCuda && kvo.type != KvType::kF32)
    return Unsupported("Session: the CUDA backend keeps its KV cache in f32, not {}",
                       KvTypeName(kvo.type));
  const size_t budget = CheckpointBudgetBytes(cfg, params.checkpoint_budget_bytes);
  if (params.memory_limit_bytes > 0) {
    // Checked before anything is allocated; what is left after the fixed terms caps the KV pages.
    // The terms of EstimateMemory's per_session: the state, the checkpoint budget plus the store's
    // spare snapshot, and the working buffers at their size for max_context (they grow with the
    // cache), so a limit of per_session for that context is exactly enough.
    const size_t limit = static_cast<size_t>(params.memory_limit_bytes);
    const size_t state = RecurrentState::BytesFor(cfg) +  // + the MTP head's carried row
                         (params.mtp ? static_cast<size_t>(cfg.n_embd) * sizeof(float) : 0);
    const size_t fixed = 2 * state + budget + WorkingBytesFor(cfg, params, max_context);
    const size_t kv_now = KvCache::BytesFor(cfg, initial, kvo);
    if (fixed + kv_now > limit) {
      return OutOfMemory(
          "Session: needs {} bytes (state, checkpoint budget and working buffers {}, KV {}), over "
          "the {}-byte limit",
          fixed + kv_now, fixed, kv_now, limit);
    }
    kvo.max_bytes = limit - fixed;
  }
  QWENRT_ASSIGN_OR_RETURN(KvCache kv, KvCache::Create(cfg, max_context, initial, kvo));
  QWENRT_ASSIGN_OR_RETURN(RecurrentState rec, RecurrentState::Create(cfg, params.mtp));
  std::unique_ptr<Session> s(new (std::nothrow) Session(std::move(model), params, max_context,
                                                        std::move(kv), std::move(rec), budget));
  if (!s) return OutOfMemory("Session: allocation failed");
  QWENRT_RETURN_IF_ERROR(s->Init());
  return s;
}

Session::Session(std::shared_ptr<const Model> model, const SessionParams& params,
                 int64_t max_context, KvCache kv, RecurrentState rec, size_t checkpoint_budget)
    : model_(std::move(model)),
      params_(params),
      max_context_(max_context),
      kv_(std::move(kv)),
      rec_(std::move(rec)),
      checkpoints_(checkpoint_budget) {}

Session::~Session() = default;

Status Session::Init() {
  QWENRT_RETURN_IF_ERROR(
      GuardAlloc([&] { last_logits_.assign(static_cast<size_t>(n_vocab()), 0.0f); },
                 "Session: cannot allocate its logits"));
  // A CUDA session needs its device context (and Create reports when it cannot have one); a CPU
  // session makes its context on first use, so one only batched by an engine never holds one.
  if (params_.backend == BackendKind::kCuda) return MakeContext();
  return OkStatus();
}

int Session::ContextThreads(const SessionParams& params) {
  // The CUDA backend does its host-side work (embedding rows, MoE routing) on the calling thread.
  return params.backend == BackendKind::kCuda ? 1 : ThreadPool::ThreadsFor(params.n_threads);
}

ForwardContext::Options Session::ContextOptions(const SessionParams& params) {
  ForwardContext::Options fo;
  fo.max_ubatch = params.ubatch;
  if (params.split_invariant) fo.backend.gdn_chunk_min_tokens = INT64_MAX;
  fo.cuda_graphs = params.cuda_graphs;
  return fo;
}

Status Session::MakeContext() try {
  try {
    pool_ = std::make_unique<ThreadPool>(ContextThreads(params_));
  } catch (const std::exception& e) {
    return OutOfMemory("Session: cannot start its thread pool: {}", e.what());
  }
  QWENRT_ASSIGN_OR_RETURN(
      ctx_, ForwardContext::Create(*model_, params_.backend, pool_.get(), ContextOptions(params_)));
  return OkStatus();
} catch (const std::bad_alloc&) {
  return OutOfMemory("Session: cannot allocate its forward context");
}

size_t Session::working_bytes() const {
  return last_logits_.capacity() * sizeof(float) + (ctx_ != nullptr ? ctx_->bytes() : 0);
}

Status Session::Reserve(int64_t positions, bool touch) {
  if (positions < 0) return InvalidArgument("Session::Reserve: positions must be >= 0");
  if (positions > max_context_) {
    return ContextFull("Session::Reserve: {} positions, the session holds at most {}", positions,
                       max_context_);
  }
  QWENRT_RETURN_IF_ERROR(kv_.Reserve(positions));
  if (touch) kv_.Prefault();
  if (params_.backend == BackendKind::kCuda) return OkStatus();  // its buffers are on the device
  if (ctx_ == nullptr) QWENRT_RETURN_IF_ERROR(MakeContext());
  return ctx_->ReserveAttention(kv_.capacity());
}

size_t Session::WorkingBytesFor(const ModelConfig& config, const SessionParams& params,
                                int64_t context) {
  // The last-token logits row (Init) and the context MakeContext makes.
  return static_cast<size_t>(config.n_vocab) * sizeof(float) +
         ForwardContext::BytesFor(config, params.backend, ContextOptions(params),
                                  ContextThreads(params), context);
}

void Session::RunPiece(SessionPiece& piece) {
  if (ctx_ == nullptr) {
    piece.status = MakeContext();
    if (!piece.status.ok()) return;
  }
  SequenceStep step;
  RunBatch(*ctx_, std::span<SessionPiece>(&piece, 1), std::span<SequenceStep>(&step, 1));
}

Status Session::MakeRoom(size_t n) {
  // Room for the tokens in the transcript first: once the forward pass has advanced the state,
  // appending them must not fail (a bad_alloc there would leave a state ahead of its transcript).
  const size_t need = transcript_.size() + n;
  if (transcript_.capacity() < need) {
    QWENRT_RETURN_IF_ERROR(
        GuardAlloc([&] { transcript_.reserve(std::max(need, 2 * transcript_.capacity())); },
                   "cannot grow the transcript to {} tokens", need));
  }
  return OkStatus();
}

void Session::RunBatch(ForwardContext& ctx, std::span<SessionPiece> pieces,
                       std::span<SequenceStep> steps) {
  size_t n = 0;  // the pieces that run: steps[0, n)
  for (SessionPiece& p : pieces) {
    Session& s = *p.session;
    p.status = s.MakeRoom(p.tokens.size());
    if (p.status.ok()) {
      steps[n] = SequenceStep{&s.kv_, &s.rec_, p.tokens, p.all_logits, p.logits, OkStatus()};
      if (s.mtp_ready()) steps[n].hidden = s.MtpHiddenRows(p.tokens.size());
      ++n;
    }
  }
  (void)ForwardBatch(ctx, steps.first(n));  // each step carries its own status
  size_t j = 0;
  for (SessionPiece& p : pieces) {
    if (p.status.ok()) {
      const SequenceStep& st = steps[j++];
      p.status = st.status;
      if (p.status.ok() && st.hidden != nullptr) p.session->MtpCatchUpAfter(ctx, p.tokens);
    }
    p.session->AfterRun(p);
  }
}

float* Session::MtpHiddenRows(size_t T) {
  const size_t need = (T + 1) * static_cast<size_t>(model_->config().n_embd);
  if (mtp_rows_.size() < need) {
    // Without the rows the head cannot follow: it stops drafting (the trunk runs on unharmed).
    if (!GuardAlloc([&] { mtp_rows_.resize(need); }, "MTP rows").ok()) {
      mtp_ready_ = false;
      return nullptr;
    }
  }
  return mtp_rows_.data() + model_->config().n_embd;  // row 0 is the carried row
}

void Session::MtpCatchUpAfter(ForwardContext& ctx, std::span<const int32_t> tokens) {
  const int64_t n_past = kv_.size() - static_cast<int64_t>(tokens.size());
  const Status st = MtpCatchUp(ctx, kv_, rec_, tokens, n_past, mtp_rows_.data());
  if (!st.ok()) {  // the trunk advanced; only drafting is lost until Reset
    mtp_ready_ = false;
    Trace("MTP catch-up failed, drafting off: " + st.ToString());
  }
}

Status Session::DraftMtp(int32_t next_token, int k, std::vector<int32_t>* drafts) {
  if (drafts == nullptr) return InvalidArgument("DraftMtp: null output");
  drafts->clear();
  if (!mtp_ready())
    return InvalidArgument("DraftMtp: the session keeps no valid MTP state (SessionParams::mtp)");
  QWENRT_RETURN_IF_ERROR(CheckTokens(std::span<const int32_t>(&next_token, 1)));
  if (ctx_ == nullptr) QWENRT_RETURN_IF_ERROR(MakeContext());
  return MtpDraftGreedy(*ctx_, kv_, rec_, next_token, k, &mtp_scratch_, drafts);
}

void Session::Trace(const std::string& line) const {
  if (params_.trace) params_.trace(line);
}

Status Session::CheckTokens(std::span<const int32_t> tokens) const {
  const int64_t V = n_vocab();
  for (size_t i = 0; i < tokens.size(); ++i)
    if (tokens[i] < 0 || tokens[i] >= V)
      return InvalidArgument("token {} at index {} is outside the vocabulary [0, {})", tokens[i], i,
                             V);
  return OkStatus();
}

int64_t Session::RestoreTo(int64_t pos, const RecurrentState* snapshot) {
  if (snapshot == nullptr || !rec_.CopyFrom(*snapshot).ok()) {  // (a device copy can fail)
    pos = 0;
    rec_.Reset();
  }
  kv_.Truncate(pos);
  transcript_.resize(static_cast<size_t>(pos));
  if (pos == 0) mtp_ready_ = true;  // nothing to follow: the head is in step again
  checkpoints_.DropAfter(pos);
  has_logits_ = false;
  return pos;
}

void Session::AfterRun(SessionPiece& piece) {
  const Status& s = piece.status;
  if (!s.ok()) {
    // Forward's own validation leaves kv/rec unchanged; anything else may have touched the state
    // half way, so fall back to a state we know: the newest checkpoint (or empty).
    if (kv_.size() != size() || s.code() == StatusCode::kInternal ||
        s.code() == StatusCode::kDevice) {
      const auto* e = checkpoints_.FindAtOrBefore(size());
      RestoreTo(e ? e->pos : 0, e ? &e->snapshot.state() : nullptr);
    }
    return;
  }
  transcript_.insert(transcript_.end(), piece.tokens.begin(), piece.tokens.end());
}

void Session::TakeCheckpoint(uint64_t turn, int64_t* created) {
  std::optional<SharedSnapshot> spare = checkpoints_.TakeSpare();
  if (spare &&
      spare->reusable() != nullptr) {  // reuse an evicted snapshot's memory (never a shared one)
    if (!spare->reusable()->CopyFrom(rec_).ok()) return;  // device error: skip
    checkpoints_.Put(size(), turn, std::move(*spare));
  } else {
    auto snap = rec_.Copy();
    if (!snap.ok()) return;  // out of memory: run on without this checkpoint
    auto shared = SharedSnapshot::Make(std::move(snap).value());
    if (!shared.ok()) return;
    checkpoints_.Put(size(), turn, std::move(shared).value());
  }
  if (created) ++*created;
}

Status Session::Feed(std::span<const int32_t> tokens, const FeedOptions& options,
                     FeedReport* report) {
  FeedJob job;
  QWENRT_RETURN_IF_ERROR(BeginFeed(tokens, options, report, &job));
  SessionPiece piece;
  while (NextFeedPiece(job, INT64_MAX, &piece)) {
    RunPiece(piece);
    FeedPieceDone(job, piece);
  }
  return EndFeed(job);
}

Status Session::BeginFeed(std::span<const int32_t> tokens, const FeedOptions& options,
                          FeedReport* report, FeedJob* job) {
  *job = FeedJob();
  job->report_ = report ? report : &job->local_;
  FeedReport& r = *job->report_;
  r = FeedReport();
  const int64_t N = static_cast<int64_t>(tokens.size());
  const int64_t M = size();
  const int64_t V = n_vocab();
  r.prompt_tokens = N;
  // Validate everything before touching the state.
  if (N == 0) return InvalidArgument("Feed: empty token sequence");
  if (N > max_context_)
    return ContextFull("Feed: {} tokens exceed the session's context of {}", N, max_context_);
  QWENRT_RETURN_IF_ERROR(CheckTokens(tokens));

  int64_t P = 0;
  while (P < std::min(N, M) && tokens[P] == transcript_[P]) ++P;
  r.common_prefix = P;

  // Where the prefill starts. The live state can be extended when the transcript is a prefix of
  // `tokens`; otherwise we need a snapshot at c <= limit (limit < N: at least one token must run to
  // produce the last position's logits, unless the live state already has them).
  const int64_t limit = std::min(P, N - 1);
  int64_t start = 0;
  const CheckpointStore<SharedSnapshot>::Entry* restore = nullptr;
  bool live = false;
  if (P == N && M == N && has_logits_) {
    start = N;
    live = true;
  } else if (P == M && M <= limit) {
    start = M;
    live = true;
  } else {
    restore = checkpoints_.FindAtOrBefore(limit);
    start = restore ? restore->pos : 0;
  }
  // Pages for [start, N), private (a page shared with a fork is copied): the prefill below cannot
  // run out of KV memory. On error nothing changed.
  QWENRT_RETURN_IF_ERROR(kv_.Reserve(N, start));

  if (options.all_logits && start < N) {
    QWENRT_RETURN_IF_ERROR(GuardAlloc([&] { logits_.resize(static_cast<size_t>((N - start) * V)); },
                                      "Feed: cannot allocate logits for {} positions", N - start));
  }

  ++turn_;
  const auto t0 = std::chrono::steady_clock::now();
  if (!live) {
    const int64_t at = RestoreTo(start, restore ? &restore->snapshot.state() : nullptr);
    if (at != start) {  // the snapshot could not be copied (a device error): from the start
      start = at;
      restore = nullptr;
      QWENRT_RETURN_IF_ERROR(GuardAlloc(
          [&] {
            if (options.all_logits) logits_.resize(static_cast<size_t>(N * V));
          },
          "Feed: cannot allocate logits for {} positions", N));
    }
  }
  r.restore_ms = MsSince(t0);
  r.reused_tokens = start;
  r.checkpoint_pos = restore ? start : -1;
  if (M == 0) r.miss_reason = MissReason::kEmpty;
  if (start < P) {
    if (limit < P) {
      r.miss_reason = MissReason::kEndsInsideTranscript;
      r.miss_detail = fmt::format(
          "the sequence ends inside the transcript: re-evaluating from {} to get the logits of "
          "position {}",
          start, N - 1);
    } else {
      r.miss_reason = MissReason::kNoCheckpoint;
      r.miss_detail = restore
                          ? fmt::format("no checkpoint between {} and {}", start + 1, P)
                          : fmt::format("no checkpoint at or before {}: prefill from the start", P);
    }
  }

  logits_rows_ = 0;
  job->tokens_ = tokens;
  job->options_ = options;
  job->start_ = start;
  job->t1_ = std::chrono::steady_clock::now();
  if (start < N) {
    std::vector<int64_t> cps = PlanCheckpointPositions(
        start, N, options.checkpoint_positions, params_.checkpoint_tail, params_.checkpoint_every);
    job->plan_ = PlanPrefill(start, N, params_.ubatch, cps);
  }
  job->running_ = true;
  return OkStatus();
}

bool Session::NextFeedPiece(FeedJob& job, int64_t max_tokens, SessionPiece* piece) {
  if (!job.running_ || !job.status_.ok() || job.next_ == job.plan_.size()) return false;
  const int64_t N = static_cast<int64_t>(job.tokens_.size());
  if (job.stop_ || IsCancelled(job.options_.cancel)) {
    job.status_ = Cancelled("Feed cancelled after {} of {} tokens (session holds {} tokens)",
                            job.report_->prefilled_tokens, N - job.start_, size());
    return false;
  }
  const PrefillBatch& b = job.plan_[job.next_];
  const int64_t begin = b.begin + job.offset_,
                end = begin + std::min(b.end - begin, std::max<int64_t>(max_tokens, 1));
  piece->session = this;
  piece->tokens = job.tokens_.subspan(static_cast<size_t>(begin), static_cast<size_t>(end - begin));
  piece->all_logits = job.options_.all_logits;
  piece->logits =
      piece->all_logits ? logits_.data() + (begin - job.start_) * n_vocab() : last_logits_.data();
  piece->status = OkStatus();
  return true;
}

void Session::FeedPieceDone(FeedJob& job, const SessionPiece& piece) {
  if (!piece.status.ok()) {
    job.status_ = piece.status;
    return;
  }
  const int64_t n = static_cast<int64_t>(piece.tokens.size()), V = n_vocab();
  if (piece.all_logits)
    std::memcpy(last_logits_.data(), piece.logits + (n - 1) * V,
                static_cast<size_t>(V) * sizeof(float));
  has_logits_ = true;
  FeedReport& r = *job.report_;
  r.prefilled_tokens += n;
  job.offset_ += n;
  const PrefillBatch& b = job.plan_[job.next_];
  if (b.begin + job.offset_ == b.end) {
    if (b.checkpoint) TakeCheckpoint(turn_, &r.checkpoints_created);
    ++job.next_;
    job.offset_ = 0;
  }
  const int64_t total = static_cast<int64_t>(job.tokens_.size()) - job.start_;
  if (job.options_.progress && !job.options_.progress(r.prefilled_tokens, total)) job.stop_ = true;
}

Status Session::EndFeed(FeedJob& job) {
  if (!job.running_) return InvalidArgument("EndFeed: no feed is running");
  job.running_ = false;
  FeedReport& r = *job.report_;
  if (job.options_.all_logits) logits_rows_ = r.prefilled_tokens;
  r.prefill_ms = MsSince(job.t1_);
  r.n_checkpoints = static_cast<int64_t>(checkpoints_.size());
  r.checkpoint_bytes = checkpoints_.bytes();
  Trace(FormatFeedLine(r) + (job.status_.ok() ? "" : "; " + job.status_.ToString()));
  return job.status_;
}

Status Session::DecodeStep(int32_t token) {
  SessionPiece piece;
  QWENRT_RETURN_IF_ERROR(BeginDecode(token, &piece));
  RunPiece(piece);
  return EndDecode(piece);
}

Status Session::BeginDecode(int32_t token, SessionPiece* piece) {
  QWENRT_RETURN_IF_ERROR(CheckTokens(std::span<const int32_t>(&token, 1)));
  if (size() + 1 > max_context_)
    return ContextFull("DecodeStep: context of {} tokens is full", max_context_);
  QWENRT_RETURN_IF_ERROR(kv_.Reserve(size() + 1));
  logits_rows_ = 0;
  decode_token_ = token;
  piece->session = this;
  piece->tokens = std::span<const int32_t>(&decode_token_, 1);
  piece->logits = last_logits_.data();
  piece->all_logits = false;
  piece->status = OkStatus();
  return OkStatus();
}

Status Session::EndDecode(const SessionPiece& piece) {
  QWENRT_RETURN_IF_ERROR(piece.status);
  has_logits_ = true;
  if (params_.checkpoint_every > 0 && size() % params_.checkpoint_every == 0)
    TakeCheckpoint(turn_, nullptr);
  return OkStatus();
}

Status Session::Generate(const GenerateOptions& options, std::vector<int32_t>* out,
                         GenerateReport* report) {
  if (options.max_draft > 0) return GenerateSpeculative(options, out, report);
  GenerateJob job;
  QWENRT_RETURN_IF_ERROR(BeginGenerate(options, out, report, &job));
  SessionPiece piece;
  while (NextGeneratePiece(job, &piece)) {
    RunPiece(piece);
    GeneratePieceDone(job, piece);
  }
  return EndGenerate(job);
}

Status Session::BeginGenerate(const GenerateOptions& options, std::vector<int32_t>* out,
                              GenerateReport* report, GenerateJob* job) {
  *job = GenerateJob();
  job->report_ = report ? report : &job->local_;
  *job->report_ = GenerateReport();
  if (!options.sampler) return InvalidArgument("Generate: no sampler");
  if (out == nullptr) return InvalidArgument("Generate: null output vector");
  if (!has_logits_) return InvalidArgument("Generate: no logits to sample from (Feed first)");
  // A verify pass is not one piece of a batched step (its token count and its rollback after the
  // pass do not fit the piece protocol yet): speculation runs in Session::Generate only.
  if (options.max_draft > 0)
    return Unsupported(
        "Generate: speculative decoding (max_draft > 0) is not supported in batched stepping "
        "(the engine's pieces); use Session::Generate");
  job->options_ = &options;
  job->out_ = out;
  job->t0_ = std::chrono::steady_clock::now();
  job->running_ = true;
  return OkStatus();
}

bool Session::NextGeneratePiece(GenerateJob& job, SessionPiece* piece) {
  if (!job.running_ || job.finished_) return false;
  const GenerateOptions& options = *job.options_;
  GenerateReport& r = *job.report_;
  const int64_t V = n_vocab();
  job.finished_ = true;  // unless a token is to be decoded below
  if (job.i_ >= options.max_tokens) return false;
  if (IsCancelled(options.cancel)) {
    job.status_ = Cancelled("Generate cancelled after {} tokens", r.n_sampled);
    return false;
  }
  int32_t tok = options.sampler(last_logits_.data(), V);
  if (tok < 0 || tok >= V) {
    job.status_ = InvalidArgument("Generate: sampler returned token {} outside [0, {})", tok, V);
    return false;
  }
  bool is_stop = std::find(options.stop_tokens.begin(), options.stop_tokens.end(), tok) !=
                 options.stop_tokens.end();
  if (!is_stop && size() + 1 > max_context_) {
    job.status_ = ContextFull("Generate: context of {} tokens is full", max_context_);
    return false;
  }
  job.out_->push_back(tok);
  ++r.n_sampled;
  ++job.i_;
  if (is_stop) {
    r.hit_stop = true;
    return false;
  }
  job.status_ = BeginDecode(tok, piece);
  if (!job.status_.ok()) return false;
  job.finished_ = false;
  return true;
}

void Session::GeneratePieceDone(GenerateJob& job, const SessionPiece& piece) {
  job.status_ = EndDecode(piece);
  if (!job.status_.ok()) {
    job.finished_ = true;
    return;
  }
  ++job.report_->n_decoded;
  const int32_t tok = piece.tokens[0];
  if (job.options_->on_token && !job.options_->on_token(tok)) job.finished_ = true;
}

Status Session::EndGenerate(GenerateJob& job) {
  if (!job.running_) return InvalidArgument("EndGenerate: no generation is running");
  job.running_ = false;
  GenerateReport& r = *job.report_;
  r.decode_ms = MsSince(job.t0_);
  Trace(fmt::format("decode {} tokens to position {} ({:.1f} ms{}){}", r.n_decoded, size(),
                    r.decode_ms, r.hit_stop ? ", stop token" : "",
                    job.status_.ok() ? "" : "; " + job.status_.ToString()));
  return job.status_;
}

void Session::set_checkpoint_budget(int64_t bytes) {
  params_.checkpoint_budget_bytes = bytes < 0 ? -1 : bytes;
  checkpoints_.set_budget(CheckpointBudgetBytes(model_->config(), bytes));
}

Status Session::SetKvType(KvType type) {
  if (type == kv_.type()) return OkStatus();
  if (params_.backend == BackendKind::kCuda && type != KvType::kF32)
    return Unsupported("Session: the CUDA backend keeps its KV cache in f32, not {}",
                       KvTypeName(type));
  KvCacheOptions o;
  o.type = type;
  o.page_rows = kv_.page_rows();
  o.max_bytes = kv_.max_bytes();
  o.mtp = kv_.has_mtp();
  QWENRT_ASSIGN_OR_RETURN(KvCache kv,
                          KvCache::Create(model_->config(), max_context_, kv_.size(), o));
  const int64_t n = kv_.size(), P = kv_.page_rows(), R = kv_.row_floats();
  std::vector<float> k, v;
  QWENRT_RETURN_IF_ERROR(GuardAlloc(
      [&] {
        k.resize(static_cast<size_t>(std::min(n, P) * R));
        v.resize(k.size());
      },
      "SetKvType: cannot allocate a conversion buffer"));
  for (int64_t a = 0; a < kv_.n_layers(); ++a) {
    for (int64_t p0 = 0; p0 < n; p0 += P) {
      const int64_t m = std::min(P, n - p0);
      kv_.ReadRows(a, p0, m, k.data(), v.data());
      kv.WriteRows(a, p0, m, k.data(), v.data());
    }
  }
  kv.Commit(n);
  kv_ = std::move(kv);
  params_.kv_type = type;
  return OkStatus();
}

Status Session::Checkpoint() {
  if (size() == 0) return OkStatus();
  int64_t created = 0;
  TakeCheckpoint(turn_, &created);
  if (created == 0)
    return OutOfMemory("Checkpoint: cannot allocate a {}-byte snapshot", rec_.bytes());
  return OkStatus();
}

void Session::Reset() {
  RestoreTo(0, nullptr);
  checkpoints_.Clear();
  logits_rows_ = 0;
}

size_t Session::checkpoint_prorated_bytes() const {
  double n = 0;
  for (const auto& e : checkpoints_.entries()) n += e.snapshot.prorated_bytes();
  return static_cast<size_t>(n + 0.5);
}

size_t Session::checkpoint_unique_bytes() const {
  size_t n = 0;
  for (const auto& e : checkpoints_.entries())
    n += e.snapshot.holders() == 1 ? e.snapshot.bytes() : 0;
  return n;
}

std::span<const float> Session::last_logits() const {
  if (!has_logits_) return {};
  return last_logits_;
}

std::span<const float> Session::logits() const {
  if (logits_rows_ > 0)
    return std::span<const float>(logits_.data(), static_cast<size_t>(logits_rows_ * n_vocab()));
  return last_logits();
}

StatusOr<std::unique_ptr<Session>> Session::Fork() {
  QWENRT_ASSIGN_OR_RETURN(KvCache kv, kv_.Copy());  // shares the pages
  QWENRT_ASSIGN_OR_RETURN(RecurrentState rec, rec_.Copy());
  // Snapshots become shared, so they must live on the host first: device-resident ones belong to
  // this session's CUDA context and the two sessions may run on different threads. (Fetching
  // changes where the contents live, not what they are.)
  QWENRT_RETURN_IF_ERROR(checkpoints_.ForEachSnapshot([](SharedSnapshot& s) { return s.Fetch(); }));
  QWENRT_ASSIGN_OR_RETURN(auto cps, checkpoints_.Copy());
  QWENRT_RETURN_IF_ERROR(rec.Fetch());  // a copy made on this session's CUDA context
  std::unique_ptr<Session> s(new (std::nothrow) Session(
      model_, params_, max_context_, std::move(kv), std::move(rec), checkpoints_.budget()));
  if (!s) return OutOfMemory("Fork: allocation failed");
  QWENRT_RETURN_IF_ERROR(s->Init());
  s->checkpoints_ = std::move(cps);
  QWENRT_RETURN_IF_ERROR(
      GuardAlloc([&] { s->transcript_ = transcript_; }, "Fork: cannot copy the transcript"));
  s->last_logits_ = last_logits_;
  s->has_logits_ = has_logits_;
  s->turn_ = turn_;
  s->mtp_ready_ = mtp_ready_;
  return s;
}

}  // namespace qwenrt

// Session: one conversation on a shared Model. It owns the attention KV cache, the recurrent (GDN)
// state, the transcript (the exact token ids whose effect the state holds; token i sits at position
// i), the recurrent-state checkpoints and its own ForwardContext and ThreadPool. `Feed` takes the
// whole token sequence of the next step and prefills only what the state does not already hold;
// `DecodeStep` / `Generate` extend it one token at a time; `Fork` and `Save*` / `Load*` copy it.
// Sampling policy and text live elsewhere (sampler.h, chat.h); this file is tokens in, logits out.
//
// Batched stepping: Feed, DecodeStep and Generate are each a Begin / Next piece / piece done / End
// sequence (FeedJob, GenerateJob below), and a piece is one forward call of this session. Alone,
// a session runs its pieces one at a time on its own ForwardContext (made on first use); a batching
// engine (chat/engine.h) collects one piece of each of many sessions and runs them together with
// Session::RunBatch on the engine's context. The bookkeeping (transcript, checkpoints, logits,
// reports) is the same code either way.
//
// Thread safety: a Model may be shared by any number of Sessions on any threads. A Session is
// externally synchronised: one thread at a time per Session ("one thread per handle at a time").
// The only cross-thread interaction allowed is the caller-owned cancel flag passed in FeedOptions /
// GenerateOptions, which another thread may set at any time.
//
// Example:
//   QWENRT_ASSIGN_OR_RETURN(auto s, Session::Create(model, {}));
//   FeedReport r;
//   QWENRT_RETURN_IF_ERROR(s->Feed(prompt_tokens, {}, &r));      // turn 1: prefills everything
//   QWENRT_RETURN_IF_ERROR(s->Generate(gen_options, &reply, nullptr));
//   QWENRT_RETURN_IF_ERROR(s->Feed(rerendered_history_plus_new, {}, &r));  // turn 2: only the new
//   part
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "model/backend.h"
#include "model/forward.h"
#include "model/kv_cache.h"
#include "model/model.h"
#include "model/mtp.h"
#include "model/recurrent_state.h"
#include "session/checkpoint.h"
#include "session/shared_snapshot.h"

namespace qwenrt {

class ByteSink;           // session_file.h
class DraftSource;        // speculative.h
class DraftLengthPolicy;  // draft_policy.h

struct SessionParams {
  BackendKind backend = BackendKind::kCpu;
  int n_threads = 0;        // workers of the session's ThreadPool; 0 = hardware concurrency
  int64_t ubatch = 512;     // most tokens per forward call during a prefill
  int64_t max_context = 0;  // most positions; 0 = the model's trained context
  int64_t initial_capacity =
      0;  // KV positions allocated up front (grows a page at a time); 0 = 1024
  // Storage of the attention KV cache (docs/kv-cache.md). nullopt = the backend's default: f16 on
  // kCpu (bit-identical to f32: the CPU path rounds K and V to f16 values before they enter the
  // cache), f32 on kRef and kCuda. q8_0 is lossy (and needs head_dim % 32 == 0). kCuda keeps its
  // device cache in f32 and refuses any other type with Unsupported.
  std::optional<KvType> kv_type;  // nullopt: DefaultKvType(backend)
  int64_t kv_page_rows = 256;     // KV positions per page: the unit of sharing between forks
  // Memory for checkpoints. -1 = room for 8 snapshots. The newest snapshot of the latest turn is
  // kept even when it alone exceeds the budget (see checkpoint.h for the eviction order).
  int64_t checkpoint_budget_bytes = -1;
  // The most bytes this session may hold (KV pages + recurrent state + checkpoint budget + working
  // buffers at max_context: the terms of EstimateMemory's per_session, docs/memory.md); 0 =
  // unlimited. Create and KV growth that would pass it fail with OutOfMemory before allocating,
  // leaving the session as it was.
  int64_t memory_limit_bytes = 0;
  int64_t checkpoint_tail =
      4;  // automatic checkpoint this many tokens before each prefill end; 0 = off
  int64_t checkpoint_every =
      0;  // also a checkpoint at every multiple of K (prefill and decode); 0 = off
  // kCpu only: results independent of how a sequence is split into forward calls, so a resumed
  // prefill equals a full one bit for bit. On by default: it runs the delta rule token-serially
  // instead of in chunks of 64, which costs ~3% of prefill time at the 0.8B shape (the delta rule
  // is a small part of a prefill next to the matmuls); false trades exactness for that speed.
  bool split_invariant = true;
  // kCuda only: replay each decode step as one captured CUDA graph (same results; measured within
  // +-5% of eager launches on an H200, so off by default; docs/cuda.md).
  bool cuda_graphs = false;
  // Keep the MTP (next-n) draft head's state in step with the trunk (docs/mtp.md): an extra KV slot
  // and one carried row, and after every forward call one batched pass of the MTP block over the
  // new positions. Needed by DraftMtp / MtpDraftSource. Only for files with an MTP block
  // (InvalidArgument otherwise) on the host backends (kCuda: Unsupported). Off: nothing is paid.
  bool mtp = false;
  // One line per step (Feed, Generate), e.g.
  // "prefill 25 tokens from position 780 (checkpoint 780, common prefix 783 of 805)". Called on the
  // session's thread.
  std::function<void(const std::string&)> trace;
};

// SessionParams::kv_type's default for a backend (see there): the one place Session::Create and
// the C ABI's memory estimate take it from.
inline KvType DefaultKvType(BackendKind backend) {
  return backend == BackendKind::kCpu ? KvType::kF16 : KvType::kF32;
}

struct FeedOptions {
  // Logits of every prefilled position (rows for positions report.reused_tokens .. N-1) instead of
  // only the last one. See Session::logits().
  bool all_logits = false;
  // Extra checkpoint positions (absolute; p = the state after tokens 0..p-1). The prefill is split
  // exactly there. Positions outside the prefilled range (reused_tokens, N] are ignored.
  std::span<const int64_t> checkpoint_positions;
  // Checked before every forward call; when set, Feed returns Cancelled (see Feed).
  const std::atomic<bool>* cancel = nullptr;
  // Called after every forward call with the tokens prefilled so far and the total to prefill;
  // returning false cancels like `cancel` does.
  std::function<bool(int64_t done, int64_t total)> progress;
};

// Why a Feed reused less than the common prefix with the transcript (FeedReport::miss_reason).
enum class MissReason {
  kNone,                  // everything in common was reused (or nothing was in common)
  kEmpty,                 // the session held nothing
  kNoCheckpoint,          // the prefix diverged inside the transcript and no checkpoint lay closer
  kEndsInsideTranscript,  // the sequence is a prefix of the transcript: its last position is re-run
};
const char* MissReasonName(MissReason reason);  // "none", "empty", "no_checkpoint", "ends_inside"

// What one Feed did. Exposed as-is by the C ABI.
struct FeedReport {
  int64_t prompt_tokens = 0;  // N: length of the sequence fed
  int64_t common_prefix = 0;  // P: longest common prefix with the transcript before the call
  int64_t reused_tokens = 0;  // positions not recomputed (= the position the prefill started at)
  int64_t checkpoint_pos =
      -1;  // checkpoint restored, -1 if none (live state used, or from scratch)
  int64_t prefilled_tokens = 0;  // tokens run through the model by this call
  MissReason miss_reason = MissReason::kNone;
  std::string miss_detail;  // the same in words, with positions; empty for kNone / kEmpty
  int64_t checkpoints_created = 0;
  int64_t n_checkpoints = 0;    // held after the call
  size_t checkpoint_bytes = 0;  // held after the call
  double restore_ms = 0;        // cutting the KV + restoring the recurrent state
  double prefill_ms = 0;        // the forward calls
};

// A sampler: picks the next token from the logits [n_vocab] of the last position.
using SamplerFn = std::function<int32_t(const float* logits, int64_t n_vocab)>;

struct GenerateOptions {
  int64_t max_tokens = 256;
  SamplerFn sampler;                     // required
  std::span<const int32_t> stop_tokens;  // sampled, returned, but not evaluated (like <|im_end|>)
  const std::atomic<bool>* cancel = nullptr;  // checked before every token
  std::function<bool(int32_t)> on_token;      // called per sampled token; false = stop after it
  // Speculative decoding (docs/speculative.md): up to max_draft tokens proposed by `draft` after
  // each sampled token are checked by one Verify pass; 0 = off. The emitted tokens, the logits the
  // sampler sees and the session afterwards are bit for bit those of max_draft = 0 (the sampler is
  // called exactly once per emitted token, in order, on the same logits), so any sampler may be
  // used; a draft is kept only when it equals what the sampler picks. At most kMaxVerifyDraft.
  // Session::Generate only: the batching engine's pieces refuse it (Unsupported), and so does
  // the kCuda backend.
  int64_t max_draft = 0;
  DraftSource* draft = nullptr;  // required when max_draft > 0; outlives the call
  // Adaptive draft length (draft_policy.h): each pass asks the policy for its drafts (at most
  // max_draft) and tells it what the pass paid. Null: max_draft every pass. Outlives the call; a
  // host keeps one per session so it learns across calls.
  DraftLengthPolicy* draft_policy = nullptr;
};

struct GenerateReport {
  int64_t n_sampled = 0;  // tokens sampled (appended to *out)
  int64_t n_decoded = 0;  // tokens evaluated (the transcript grew by this much)
  bool hit_stop = false;  // ended on a stop token
  double decode_ms = 0;
  // Speculative decoding (max_draft > 0): draft tokens proposed and checked, those accepted (each
  // saved one decode step), and the verify passes run (one per sampled token that was not itself
  // an accepted draft).
  int64_t drafted = 0;
  int64_t accepted = 0;
  int64_t verify_passes = 0;
};

// Most draft tokens one Session::Verify checks: the pass of 1 + k tokens must stay below
// cpu::kGatedDeltaChunkMinTokens so the delta rule runs its token-serial form, which is bit for bit
// the same as decoding the tokens one at a time (the chunked form is not).
inline constexpr int64_t kMaxVerifyDraft = 14;

// What Session::Verify kept: tokens[0 .. accepted] are now in the transcript (accepted drafts plus
// the first token), and `next` is the token chosen after the last of them (-1 when the chooser
// stopped without one).
struct VerifyResult {
  int64_t accepted = 0;  // j: drafts kept (0 .. k)
  int32_t next = -1;     // c_j
};
// Verify's chooser: given the logits [V] after tokens[0 .. i], returns the target's token c_i, or
// -1 to keep tokens[0 .. i] and stop there without a next token.
using VerifyChooser = std::function<int32_t(int64_t i, const float* logits)>;

// The one trace line of a feed, e.g.
// "prefill 25 tokens from position 780 (checkpoint 780, common prefix 783 of 805)", plus
// "; miss: <detail>" when less than the common prefix was reused.
std::string FormatFeedLine(const FeedReport& report);

class Session;

// One forward call of a session: `tokens` at the end of its transcript, logits into `logits`
// ([T, V] when all_logits, else [V]). Made by NextFeedPiece / NextGeneratePiece / BeginDecode;
// `status` is set by RunBatch.
struct SessionPiece {
  Session* session = nullptr;
  std::span<const int32_t> tokens;
  float* logits = nullptr;
  bool all_logits = false;
  Status status;
};

// A Feed in progress (Session::BeginFeed). Holds `tokens` by reference: they must outlive it.
class FeedJob {
 public:
  bool running() const { return running_; }
  const FeedReport& report() const { return *report_; }

 private:
  friend class Session;
  std::span<const int32_t> tokens_;
  FeedOptions options_;
  FeedReport local_;
  FeedReport* report_ = &local_;
  std::vector<PrefillBatch> plan_;
  size_t next_ = 0;       // plan_ entry being run
  int64_t offset_ = 0;    // its tokens already run
  int64_t start_ = 0;     // first position prefilled
  bool stop_ = false;     // progress() asked to stop
  bool running_ = false;  // between BeginFeed and EndFeed
  Status status_;
  std::chrono::steady_clock::time_point t1_;
};

// A Generate in progress (Session::BeginGenerate). Holds `options` and `out` by reference.
class GenerateJob {
 public:
  bool running() const { return running_; }

 private:
  friend class Session;
  const GenerateOptions* options_ = nullptr;
  std::vector<int32_t>* out_ = nullptr;
  GenerateReport local_;
  GenerateReport* report_ = &local_;
  int64_t i_ = 0;  // tokens sampled so far
  bool running_ = false;
  bool finished_ = false;  // no more pieces (stop token, max_tokens, on_token false, an error)
  Status status_;
  std::chrono::steady_clock::time_point t0_;
};

class Session {
 public:
  // Errors: InvalidArgument (null model, bad params), Unsupported (backend), OutOfMemory.
  static StatusOr<std::unique_ptr<Session>> Create(std::shared_ptr<const Model> model,
                                                   const SessionParams& params);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Makes the state hold exactly `tokens` (N >= 1) and leaves the logits of position N-1 in
  // last_logits(), recomputing as little as possible:
  //  P = longest common prefix of `tokens` and transcript(). If the transcript is a prefix of
  //  `tokens`, the live state is extended. Otherwise the KV is cut back and the recurrent state is
  //  restored from the newest checkpoint at c <= min(P, N-1) (position 0 if there is none), and
  //  tokens c..N-1 are prefilled. If `tokens` equals the transcript nothing is computed.
  //  Checkpoints are taken as docs/checkpoints.md says.
  // Errors (session unchanged): InvalidArgument (empty, or a token id outside [0, n_vocab)),
  // ContextFull (N > max context), OutOfMemory (KV growth).
  // Cancelled: the session holds a prefix of `tokens` (transcript() says which) and is consistent;
  // feed again to continue. Other errors during the forward pass leave a consistent session
  // rolled back to its newest checkpoint.
  // `report` may be null. One thread per handle at a time.
  Status Feed(std::span<const int32_t> tokens, const FeedOptions& options, FeedReport* report);

  // Evaluates one token at the end of the transcript; its logits go to last_logits().
  // Errors (session unchanged): InvalidArgument (token id), ContextFull, OutOfMemory.
  Status DecodeStep(int32_t token);

  // Samples from last_logits(), appends the token to *out and evaluates it, until max_tokens,
  // a stop token (appended, not evaluated), on_token returning false, or cancellation (returns
  // Cancelled; everything sampled so far is in *out and evaluated). Errors: InvalidArgument (no
  // logits yet — Feed first; no sampler; null out; the sampler returned an id outside the
  // vocabulary — that token is not appended), ContextFull (stops before overflowing; the tokens
  // generated so far stay). After any error the transcript is exactly what was evaluated.
  Status Generate(const GenerateOptions& options, std::vector<int32_t>* out,
                  GenerateReport* report);

  // Speculative verification in one forward pass (speculative.cpp, docs/speculative.md).
  // tokens = [t0, d1 .. dk]: t0 the next token (not yet evaluated), d the drafts (k <=
  // kMaxVerifyDraft). All 1+k run in one pass with all logits; then for i = 0, 1, ..
  // c_i = choose(i, logits after tokens[0..i]) and the drafts are accepted while d_{i+1} == c_i.
  // Afterwards the session holds t0, d1 .. dj (j = result->accepted), its KV truncated there, its
  // recurrent state (delta rule and conv windows) rebuilt after dj from what the pass recorded
  // (no second trunk pass), last_logits() = the row of dj, and checkpoints taken as DecodeStep
  // would have: bit for bit the session that DecodeStep(t0), DecodeStep(d1) .. DecodeStep(dj)
  // leaves. Errors (the session unchanged): InvalidArgument (empty, too many drafts, token ids),
  // ContextFull, OutOfMemory, Unsupported (kCuda), Cancelled (`cancel` set before the pass).
  Status Verify(std::span<const int32_t> tokens, const VerifyChooser& choose, VerifyResult* result,
                const std::atomic<bool>* cancel = nullptr);
  // Memory Verify keeps between calls (the state before the pass, the recorded GDN inputs and the
  // logits rows of the longest pass so far, at most kMaxVerifyDraft + 1 tokens); 0 before the
  // first Verify.
  size_t verify_bytes() const;

  // --- stepping (see the file comment); one thread per session at a time, as for Feed ---
  // Feed = BeginFeed; while (NextFeedPiece) { run the piece; FeedPieceDone } EndFeed. BeginFeed
  // returns Feed's up-front errors (nothing changed, job not running); EndFeed returns Feed's
  // result. `max_tokens` caps the piece (a step's token budget); results do not depend on it when
  // the session is split_invariant.
  Status BeginFeed(std::span<const int32_t> tokens, const FeedOptions& options, FeedReport* report,
                   FeedJob* job);
  bool NextFeedPiece(FeedJob& job, int64_t max_tokens, SessionPiece* piece);
  void FeedPieceDone(FeedJob& job, const SessionPiece& piece);
  Status EndFeed(FeedJob& job);
  // DecodeStep = BeginDecode; run the piece; EndDecode.
  Status BeginDecode(int32_t token, SessionPiece* piece);
  Status EndDecode(const SessionPiece& piece);
  // Generate = BeginGenerate; while (NextGeneratePiece) { run the piece; GeneratePieceDone }
  // EndGenerate (which returns Generate's result).
  Status BeginGenerate(const GenerateOptions& options, std::vector<int32_t>* out,
                       GenerateReport* report, GenerateJob* job);
  bool NextGeneratePiece(GenerateJob& job, SessionPiece* piece);
  void GeneratePieceDone(GenerateJob& job, const SessionPiece& piece);
  Status EndGenerate(GenerateJob& job);
  // Runs the pieces (at most one per session) in one ForwardBatch on `ctx` (made for this model,
  // with max_sequences >= pieces.size()) and does each session's bookkeeping; each piece gets its
  // status. `steps`: scratch of at least pieces.size() entries.
  static void RunBatch(ForwardContext& ctx, std::span<SessionPiece> pieces,
                       std::span<SequenceStep> steps);
  // Runs one piece alone on the session's own context (made on first use); sets piece.status.
  void RunPiece(SessionPiece& piece);

  // Snapshots the live state as a checkpoint at the current position (no-op when empty).
  Status Checkpoint();

  // Forgets everything (empty transcript, no checkpoints, zero state). Capacity is kept.
  void Reset();

  // Allocates now what growing to `positions` would allocate: KV pages for them and, on the CPU,
  // the forward context with its attention scratch for a cache that long (the terms of
  // EstimateMemory's per_session, docs/memory.md), so a host learns at once whether a long
  // conversation fits, not at token 200,000. `touch` writes the new KV pages so the operating
  // system commits them now (it maps untouched allocations lazily). The transcript, state and
  // logits do not change. Errors: InvalidArgument (positions < 0), ContextFull (positions >
  // max_context()), OutOfMemory (also: over SessionParams::memory_limit_bytes, checked before
  // allocating).
  Status Reserve(int64_t positions, bool touch);

  // Changes the storage type of the KV cache (SessionParams::kv_type), converting the rows it holds
  // (through f32: exact between f32 and f16 on the CPU path; to q8_0 lossy). The converted cache
  // shares no pages. Errors (session unchanged): Unsupported (kCuda with a type other than f32, or
  // q8_0 on a head size that is not a multiple of 32), InvalidArgument (unknown type), OutOfMemory.
  Status SetKvType(KvType type);

  // Changes the checkpoint memory budget (bytes; -1 = room for 8 snapshots, as in SessionParams)
  // and evicts down to it at once. Used by the C ABI's qwenrt_session_set_checkpoint_budget.
  void set_checkpoint_budget(int64_t bytes);

  // A new independent Session with the same KV (its pages shared, not copied: copy-on-write when
  // either side writes into a shared page, so only the partial last page is ever copied), the same
  // checkpoints (shared snapshots: immutable from then on), a copy of the live recurrent state, the
  // transcript and the last logits, plus its own ThreadPool/ForwardContext. Cost: O(KV pages +
  // checkpoints) for those, plus one recurrent state's bytes. The two sessions may then run on
  // different threads. The fork gets the same params (trace callback included). Errors:
  // OutOfMemory, Device (copying device state). Not const: device-resident checkpoints are fetched
  // to the host before they are shared.
  StatusOr<std::unique_ptr<Session>> Fork();

  // Save: transcript, KV (valid prefix), recurrent state, checkpoints, last logits and the chat
  // layer's opaque `chat_state` (the CHAT section), with format version, model fingerprint and
  // CRC-32 (docs/session-format.md). The file is written atomically (temp file + rename). Not
  // const: state the CUDA backend holds on the device is fetched to the host first. Errors: Io,
  // OutOfMemory, Device.
  Status SaveToFile(const std::string& path, std::span<const uint8_t> chat_state = {});
  StatusOr<std::vector<uint8_t>> SaveToMemory(std::span<const uint8_t> chat_state = {});
  // Checks a saved chat state (its bytes and the saved transcript length) before a load commits.
  using ChatStateCheck =
      std::function<Status(std::span<const uint8_t> chat_state, int64_t n_tokens)>;
  // Load replaces this session's contents with the saved ones (only after the whole file has been
  // verified, `check` included; on error the session is unchanged). `chat_state` (may be null)
  // receives the CHAT blob (or a version-1 file's SAMP blob, the same bytes under their old name).
  // Errors: Io, BadFormat (damaged, truncated, not a session file, inconsistent contents),
  // Unsupported (other format version), InvalidArgument (saved with a different model),
  // ContextFull (more tokens than this session's max context), OutOfMemory, and `check`'s.
  Status LoadFromFile(const std::string& path, std::vector<uint8_t>* chat_state = nullptr,
                      const ChatStateCheck& check = nullptr);
  Status LoadFromMemory(std::span<const uint8_t> bytes, std::vector<uint8_t>* chat_state = nullptr,
                        const ChatStateCheck& check = nullptr);

  // Logits of the position after the transcript's last token: [n_vocab]; empty when the transcript
  // is empty or was restored without logits.
  std::span<const float> last_logits() const;
  // Logits written by the last Feed: [prefilled_tokens, n_vocab] with all_logits, else the same
  // as last_logits(). Valid until the next call that changes the session.
  std::span<const float> logits() const;

  const std::vector<int32_t>& transcript() const { return transcript_; }
  int64_t size() const { return static_cast<int64_t>(transcript_.size()); }
  int64_t capacity() const { return kv_.capacity(); }
  int64_t max_context() const { return max_context_; }
  int64_t n_vocab() const { return model_->config().n_vocab; }
  std::vector<CheckpointInfo> checkpoints() const { return checkpoints_.List(); }
  size_t checkpoint_bytes() const { return checkpoints_.bytes(); }
  // Checkpoint memory when each snapshot's bytes are divided among the sessions holding it (forks
  // share their parent's snapshots); summed over sessions that share only among themselves: what
  // they hold together.
  size_t checkpoint_prorated_bytes() const;
  size_t checkpoint_unique_bytes() const;  // snapshots no other session holds
  // One evicted snapshot kept for reuse by the next checkpoint (0 or state_bytes()); not in the
  // budget.
  size_t spare_checkpoint_bytes() const { return checkpoints_.spare_bytes(); }
  size_t state_bytes() const { return rec_.bytes(); }  // one checkpoint costs this much
  // KV cache memory (kv_cache.h): every page held; the pages no other session holds; the pages
  // shared with others (forks); this session's share when each page is divided among its holders
  // (summed over sessions that share only among themselves: what they hold together).
  size_t kv_bytes() const { return kv_.bytes(); }
  size_t kv_unique_bytes() const { return kv_.unique_bytes(); }
  size_t kv_shared_bytes() const { return kv_.shared_bytes(); }
  size_t kv_prorated_bytes() const { return kv_.prorated_bytes(); }
  KvType kv_type() const { return kv_.type(); }
  // Working memory of the forward pass on the host: the session's ForwardContext (activations and
  // attention scratch, ForwardContext::bytes(); made on first use, so 0 before a CPU session ran)
  // and its last-token logits. Not included: the rows of an all_logits Feed (logits(); their size
  // is the request's) and the per-thread conversion scratch of the matmuls (docs/memory.md).
  size_t working_bytes() const;
  // What working_bytes() reaches for `params` once the session has run with `context` positions in
  // its cache: the same functions size the allocation (ForwardContext::BytesFor, the logits row),
  // so EstimateMemory's working_per_session cannot drift from it.
  static size_t WorkingBytesFor(const ModelConfig& config, const SessionParams& params,
                                int64_t context);
  const SessionParams& params() const { return params_; }
  const std::shared_ptr<const Model>& model() const { return model_; }

  // --- MTP draft head (SessionParams::mtp; model/mtp.h, docs/mtp.md) ---
  // Whether the head's state matches the transcript, so drafting can run: false without
  // SessionParams::mtp, after a session file without the head's state was loaded, or after a
  // catch-up pass failed (out of memory); Reset() makes it true again.
  bool mtp_ready() const { return kv_.has_mtp() && mtp_ready_; }
  // Up to k greedy drafts of the tokens after `next_token`, the token the target picked to follow
  // the transcript (model/mtp.h, MtpDraftGreedy). Writes only the head's scratch rows: the
  // transcript, logits and everything a save holds stay as they were. Errors: InvalidArgument
  // (not mtp_ready(), empty transcript, bad token, k < 0), OutOfMemory / ContextFull (KV pages).
  Status DraftMtp(int32_t next_token, int k, std::vector<int32_t>* drafts);
  // The state itself, read-only (tests compare the MTP rows; the speculative loop reads sizes).
  const KvCache& kv_cache() const { return kv_; }
  const RecurrentState& recurrent_state() const { return rec_; }

 private:
  Session(std::shared_ptr<const Model> model, const SessionParams& params, int64_t max_context,
          KvCache kv, RecurrentState rec, size_t checkpoint_budget);
  Status Init();
  // Checks ids and capacity for appending `n` tokens (nothing mutated).
  Status CheckTokens(std::span<const int32_t> tokens) const;
  Status MakeContext();  // the session's own ForwardContext and ThreadPool
  // The pool size and ForwardContext options MakeContext uses for `params`.
  static int ContextThreads(const SessionParams& params);
  static ForwardContext::Options ContextOptions(const SessionParams& params);
  Status MakeRoom(size_t n);  // transcript capacity for n more tokens
  // After a piece ran: appends its tokens to the transcript; on a forward error, rolls back.
  void AfterRun(SessionPiece& piece);
  // MTP head: the buffer a piece of T tokens writes its hidden rows to (null: out of memory, and
  // the head stops), and the catch-up pass after the piece ran (model/mtp.h).
  float* MtpHiddenRows(size_t T);
  void MtpCatchUpAfter(ForwardContext& ctx, std::span<const int32_t> tokens);
  // Cuts the transcript/KV to `pos` and loads the recurrent state of the checkpoint at `pos`
  // (or zeros for pos == 0); drops checkpoints after pos. Returns the position restored to: 0 when
  // the snapshot could not be copied (a device error).
  int64_t RestoreTo(int64_t pos, const RecurrentState* snapshot);
  void TakeCheckpoint(uint64_t turn, int64_t* created);
  void Trace(const std::string& line) const;
  Status FetchStates();  // device-resident recurrent states (live, checkpoints) to the host
  Status WriteTo(ByteSink* sink, std::span<const uint8_t> chat_state) const;
  Status GenerateSpeculative(const GenerateOptions& options, std::vector<int32_t>* out,
                             GenerateReport* report);
  Status PrepareVerify(int64_t tokens);  // the buffers below, for a pass of `tokens`

  std::shared_ptr<const Model> model_;
  SessionParams params_;
  int64_t max_context_;
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<ForwardContext> ctx_;          // for running alone; made on first use
  int32_t decode_token_ = 0;                     // the token of the piece BeginDecode made
  KvCache kv_;                                   // attention K/V, size() == transcript_.size()
  RecurrentState rec_;                           // GDN state after transcript_
  std::vector<int32_t> transcript_;              // [size()]
  CheckpointStore<SharedSnapshot> checkpoints_;  // every entry pos <= size(), valid for transcript_
  std::vector<float> last_logits_;               // [V] when has_logits_
  bool has_logits_ = false;
  std::vector<float> logits_;  // [rows, V]: what the last Feed returned with all_logits
  int64_t logits_rows_ = 0;    // 0 = logits() is last_logits()
  uint64_t turn_ = 0;          // Feed calls so far (checkpoints remember theirs)
  // MTP draft head (SessionParams::mtp): whether its state is valid for transcript_, the hidden
  // rows of the running piece ([T+1, E]: row 0 the carried row, rows 1..T the trunk's), and the
  // drafting scratch.
  bool mtp_ready_ = true;
  std::vector<float> mtp_rows_;
  MtpDraftScratch mtp_scratch_;
  // Verify's buffers, sized by the longest pass so far (bounded by kMaxVerifyDraft + 1 tokens): the
  // pass's GDN inputs and the state before it (forward.h's GdnCapture), and its logits [tokens, V].
  std::unique_ptr<GdnCapture> verify_capture_;
  std::vector<float> verify_logits_;
};

}  // namespace qwenrt

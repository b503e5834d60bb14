// The MTP (multi-token prediction, "next-n") draft head of Qwen3.5 files (docs/mtp.md): one extra
// full-attention block, blk.L, that predicts the token after next from the trunk's last hidden
// state and the next token. ForwardMtp (forward.h) runs the block; this file keeps its state in
// step with the trunk and drafts tokens greedily.
//
// State, per sequence (docs/mtp.md, "State"): after the trunk has run positions 0 .. n-1,
//   - the MTP slot of the KvCache (KvCacheOptions::mtp) holds valid rows [0, n-1): row i was
//     computed from the trunk's post-norm hidden h_i and token x_{i+1} (both true, never drafts);
//   - RecurrentState::mtp_hidden() holds h_{n-1}, the row the next MTP step fuses with x_n.
// Rows at and past n-1 are scratch that drafting writes and the next catch-up overwrites. Both
// parts travel with the trunk state (truncation, checkpoints, forks, save/load) by construction.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/status.h"
#include "model/forward.h"
#include "model/kv_cache.h"
#include "model/recurrent_state.h"

namespace qwenrt {

// After a trunk pass ran `tokens` (T >= 1) at positions n_past .. n_past+T-1 with
// SequenceStep::hidden = rows + E (so rows: [T+1, E], rows 1..T = h_{n_past} .. h_{n_past+T-1}),
// computes the MTP rows n_past-1 .. n_past+T-2 in one batched ForwardMtp (row 0 of `rows` is filled
// here from rec.mtp_hidden(); at n_past == 0 there is no row -1 and the pass starts at row 0 with
// tokens[1..]) and moves h_{n_past+T-1} into rec.mtp_hidden(). Errors (state unchanged except
// rows): ForwardMtp's.
Status MtpCatchUp(ForwardContext& ctx, KvCache& kv, RecurrentState& rec,
                  std::span<const int32_t> tokens, int64_t n_past, float* rows);

// Rollback after a verification pass (issue 27 point 2): a pass ran T tokens from n_past with
// MtpCatchUp (`rows` as there) and only the first `kept` (1 <= kept <= T) stay, the KV cut to
// n_past + kept. The head's rows need nothing: row i reads only h_i, x_{i+1} and the rows before
// it, so every row below the new size - 1 came from kept tokens; only the carried row moves back,
// to h_{n_past+kept-1} = rows[kept]. (No-op for kept == T.)
void MtpKeepPrefix(RecurrentState& rec, const float* rows, int64_t kept);

// Scratch of MtpDraftGreedy, grown on first use.
struct MtpDraftScratch {
  std::vector<float> h;       // [2, E] the fused row in and the head-normed row out
  std::vector<float> logits;  // [V]
};

// Up to k greedy drafts after a state of n = kv.size() >= 1 positions whose next token is `next`:
// step 1 runs at position n-1 with (h_{n-1}, next), step s > 1 at n-2+s with (the previous step's
// head-normed row, the previous draft); each draft is the argmax of its logits (lowest id on a
// tie). Stops early at the cache's max_tokens. Writes only MTP rows >= n-1 (scratch); the trunk
// and rec are not changed. Errors: InvalidArgument (no MTP state, n == 0, k < 0, bad token),
// ContextFull / OutOfMemory (KV pages for the draft rows).
Status MtpDraftGreedy(ForwardContext& ctx, KvCache& kv, const RecurrentState& rec, int32_t next,
                      int k, MtpDraftScratch* scratch, std::vector<int32_t>* drafts);

}  // namespace qwenrt

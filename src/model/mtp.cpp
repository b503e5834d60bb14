// MTP catch-up and greedy drafting (mtp.h; docs/mtp.md).
#include "model/mtp.h"

#include <algorithm>

#include "base/guard_alloc.h"

namespace qwenrt {

Status MtpCatchUp(ForwardContext& ctx, KvCache& kv, RecurrentState& rec,
                  std::span<const int32_t> tokens, int64_t n_past, float* rows) {
  const int64_t E = ctx.model().config().n_embd, T = static_cast<int64_t>(tokens.size());
  if (!rec.has_mtp() || !kv.has_mtp())
    return InvalidArgument("MTP catch-up: the state has no MTP part");
  if (T == 0 || rows == nullptr) return InvalidArgument("MTP catch-up: no rows");
  std::copy_n(rec.mtp_hidden(), E, rows);  // h_{n_past-1}: fused with tokens[0]
  // Row i of the MTP pass fuses h_i with x_{i+1}: at n_past == 0 the first token has no hidden
  // state before it, so the pass starts one row later.
  const int64_t skip = n_past == 0 ? 1 : 0;
  if (T > skip) {
    MtpStep step;
    step.kv = &kv;
    step.pos = n_past - 1 + skip;
    step.tokens = tokens.subspan(static_cast<size_t>(skip));
    step.hidden = rows + skip * E;
    QWENRT_RETURN_IF_ERROR(ForwardMtp(ctx, step));
  }
  std::copy_n(rows + T * E, E, rec.mtp_hidden());  // h_{n_past+T-1}
  return OkStatus();
}

void MtpKeepPrefix(RecurrentState& rec, const float* rows, int64_t kept) {
  const int64_t E = rec.mtp_floats();
  std::copy_n(rows + kept * E, E, rec.mtp_hidden());
}

Status MtpDraftGreedy(ForwardContext& ctx, KvCache& kv, const RecurrentState& rec, int32_t next,
                      int k, MtpDraftScratch* scratch, std::vector<int32_t>* drafts) {
  const ModelConfig& c = ctx.model().config();
  const int64_t E = c.n_embd, V = c.n_vocab, n = kv.size();
  if (drafts == nullptr || scratch == nullptr)
    return InvalidArgument("MTP draft: null output or scratch");
  drafts->clear();
  if (!rec.has_mtp() || !kv.has_mtp()) return InvalidArgument("MTP draft: no MTP state");
  if (n == 0) return InvalidArgument("MTP draft: nothing has been evaluated yet");
  if (k < 0) return InvalidArgument("MTP draft: negative draft length {}", k);
  QWENRT_RETURN_IF_ERROR(GuardAlloc(
      [&] {
        scratch->h.resize(static_cast<size_t>(2 * E));
        scratch->logits.resize(static_cast<size_t>(V));
        drafts->reserve(static_cast<size_t>(k));
      },
      "MTP draft: out of memory"));
  float* in = scratch->h.data();
  float* out = in + E;
  std::copy_n(rec.mtp_hidden(), E, in);
  int32_t token = next;
  for (int s = 0; s < k && n - 1 + s < kv.max_tokens(); ++s) {
    MtpStep step;
    step.kv = &kv;
    step.pos = n - 1 + s;
    step.tokens = std::span<const int32_t>(&token, 1);
    step.hidden = in;
    step.out_hidden = out;
    step.logits = scratch->logits.data();
    QWENRT_RETURN_IF_ERROR(ForwardMtp(ctx, step));
    const float* l = scratch->logits.data();
    token = static_cast<int32_t>(std::max_element(l, l + V) - l);
    drafts->push_back(token);
    std::swap(in, out);  // the head-normed row is the next step's hidden input
  }
  return OkStatus();
}

}  // namespace qwenrt

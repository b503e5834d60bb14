// EstimateMemory: sums the size functions the allocations use (memory_estimate.h).
#include "session/memory_estimate.h"

#include <algorithm>

#include "model/kv_cache.h"
#include "model/model.h"
#include "model/recurrent_state.h"
#include "session/session.h"

namespace qwenrt {

size_t CheckpointBudgetBytes(const ModelConfig& config, int64_t requested) {
  // max(.., 1): a model without GDN layers still gets a nonzero budget, as before.
  return requested < 0 ? 8 * std::max<size_t>(RecurrentState::BytesFor(config), 1)
                       : static_cast<size_t>(requested);
}

StatusOr<MemoryEstimate> EstimateMemory(const ModelConfig& config,
                                        const MemoryEstimateParams& params) {
  if (params.context < 0) return InvalidArgument("memory estimate: context {} < 0", params.context);
  const int64_t context = params.context > 0 ? params.context : config.n_ctx_train;
  if (context <= 0) return InvalidArgument("memory estimate: the model has no trained context");
  if (params.sessions < 1)
    return InvalidArgument("memory estimate: sessions must be >= 1 (got {})", params.sessions);
  if (params.kv_page_rows < 1 || params.kv_page_rows > (int64_t{1} << 20))
    return InvalidArgument("memory estimate: KV page size {} is outside [1, {}]",
                           params.kv_page_rows, 1 << 20);
  if (params.checkpoint_budget_bytes < -1)
    return InvalidArgument("memory estimate: checkpoint budget {} < -1",
                           params.checkpoint_budget_bytes);
  if (params.ubatch < 1)
    return InvalidArgument("memory estimate: ubatch must be >= 1 (got {})", params.ubatch);
  if (params.n_threads < 0)
    return InvalidArgument("memory estimate: n_threads {} < 0", params.n_threads);
  if (static_cast<uint32_t>(params.kv_type) >= kKvTypeCount)
    return InvalidArgument("memory estimate: unknown KV type {}",
                           static_cast<uint32_t>(params.kv_type));
  if (config.n_attn_layers() > 0 && !KvTypeFits(params.kv_type, config.head_dim))
    return Unsupported("memory estimate: KV type {} needs a head size that is a multiple of 32",
                       KvTypeName(params.kv_type));
  KvCacheOptions kvo;
  kvo.type = params.kv_type;
  kvo.page_rows = params.kv_page_rows;
  if (params.mtp && config.n_nextn == 0)
    return InvalidArgument("memory estimate: mtp asked for, but the model has no MTP block");
  kvo.mtp = params.mtp;
  MemoryEstimate e;
  e.kv_per_session = KvCache::BytesFor(config, context, kvo);
  e.state_per_session = RecurrentState::BytesFor(config) +  // + the head's carried row
                        (params.mtp ? static_cast<size_t>(config.n_embd) * sizeof(float) : 0);
  e.checkpoints_per_session =
      CheckpointBudgetBytes(config, params.checkpoint_budget_bytes) + e.state_per_session;
  SessionParams sp;  // the session the estimate is of: the CPU backend and the working sizes
  sp.backend = BackendKind::kCpu;
  sp.ubatch = params.ubatch;
  sp.n_threads = params.n_threads;
  e.working_per_session = Session::WorkingBytesFor(config, sp, context);
  e.per_session =
      e.kv_per_session + e.state_per_session + e.checkpoints_per_session + e.working_per_session;
  e.total = static_cast<size_t>(params.sessions) * e.per_session;
  return e;
}

StatusOr<MemoryEstimate> EstimateMemory(const Model& model, const MemoryEstimateParams& params) {
  QWENRT_ASSIGN_OR_RETURN(MemoryEstimate e, EstimateMemory(model.config(), params));
  e.weights = model.resident_weight_bytes();
  e.total += e.weights;
  return e;
}

}  // namespace qwenrt

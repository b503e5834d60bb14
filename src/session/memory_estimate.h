// EstimateMemory: the bytes a number of sessions of a model will hold, known before any is created
// (docs/memory.md). Every term comes from the size function the allocation itself calls
// (KvCache::BytesFor, RecurrentState::BytesFor, CheckpointBudgetBytes, Session::WorkingBytesFor),
// so the estimate and what Session::Create, KV growth and the forward pass allocate cannot drift
// apart. Estimates are of CPU sessions (the backend AUTO resolves to without CUDA).
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/status.h"
#include "model/config.h"
#include "ops/kv_view.h"

namespace qwenrt {

class Model;

struct MemoryEstimateParams {
  int64_t context = 0;                   // positions per session; 0 = the model's trained context
  KvType kv_type = KvType::kF16;         // the CPU session default
  int64_t kv_page_rows = 256;            // SessionParams::kv_page_rows
  int64_t sessions = 1;                  // independent sessions (forks share pages and count less)
  int64_t checkpoint_budget_bytes = -1;  // per session, as SessionParams (-1 = its default)
  int64_t ubatch = 512;                  // SessionParams::ubatch: rows of the activations
  int n_threads = 0;  // SessionParams::n_threads (0 = every hardware thread): attention tiles
  bool mtp = false;   // SessionParams::mtp: the MTP draft head's KV slot and carried row
};

struct MemoryEstimate {
  size_t weights = 0;            // Model::resident_weight_bytes() (0 for a config)
  size_t kv_per_session = 0;     // KV pages covering `context` positions, all attention layers
  size_t state_per_session = 0;  // recurrent state of the GDN layers
  // The checkpoint budget plus the one spare snapshot the store keeps for reuse (checkpoint.h).
  size_t checkpoints_per_session = 0;
  // The forward pass's working buffers once the session has run at `context` positions:
  // activations for `ubatch` rows, attention scratch for `n_threads` threads over `context` keys,
  // and the last-token logits (Session::working_bytes()).
  size_t working_per_session = 0;
  size_t per_session = 0;  // the four above
  size_t total = 0;        // weights + sessions * per_session
};

// What Session::Create gives the checkpoint store: `requested` bytes, or 8 recurrent states when
// `requested` is -1.
size_t CheckpointBudgetBytes(const ModelConfig& config, int64_t requested);

// For a configuration alone (weights 0) or a loaded model. Not counted (docs/memory.md): the rows
// of an all_logits Feed, the matmuls' per-thread activation conversions (held by the calling
// thread, not the session) and thread stacks. Errors: InvalidArgument (context < 0, or 0 without a
// trained context; sessions < 1, page rows outside [1, 2^20], checkpoint budget < -1, unknown KV
// type, ubatch < 1, n_threads < 0), Unsupported (q8_0 with a head size not a multiple of 32).
StatusOr<MemoryEstimate> EstimateMemory(const ModelConfig& config,
                                        const MemoryEstimateParams& params);
StatusOr<MemoryEstimate> EstimateMemory(const Model& model, const MemoryEstimateParams& params);

}  // namespace qwenrt

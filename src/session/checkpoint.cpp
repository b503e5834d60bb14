// Checkpoint placement and prefill batch planning (pure functions; the store is in checkpoint.h).
#include "session/checkpoint.h"

namespace qwenrt {

std::vector<int64_t> PlanCheckpointPositions(int64_t start, int64_t end,
                                             std::span<const int64_t> requested, int64_t tail,
                                             int64_t every) {
  std::vector<int64_t> out;
  if (end <= start) return out;
  for (int64_t p : requested)
    if (p > start && p <= end) out.push_back(p);
  out.push_back(end);
  if (tail > 0 && end - tail > start) out.push_back(end - tail);
  if (every > 0) {
    for (int64_t p = (start / every + 1) * every; p <= end; p += every) out.push_back(p);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<PrefillBatch> PlanPrefill(int64_t start, int64_t end, int64_t ubatch,
                                      std::span<const int64_t> checkpoints) {
  std::vector<PrefillBatch> out;
  if (ubatch < 1) ubatch = 1;
  size_t ci = 0;
  while (ci < checkpoints.size() && checkpoints[ci] <= start) ++ci;
  int64_t pos = start;
  while (pos < end) {
    int64_t stop = std::min(end, (pos / ubatch + 1) * ubatch);
    bool checkpoint = false;
    if (ci < checkpoints.size() && checkpoints[ci] <= stop) {
      stop = checkpoints[ci];
      checkpoint = true;
      ++ci;
    }
    out.push_back({pos, stop, checkpoint});
    pos = stop;
  }
  return out;
}

}  // namespace qwenrt

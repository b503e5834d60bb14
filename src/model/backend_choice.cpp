// Batching support per backend and the AUTO decision (backend_choice.h).
#include "model/backend_choice.h"

#include "ops/cuda_device.h"

namespace qwenrt {

Status CheckBatching(BackendKind kind) {
  switch (kind) {
    case BackendKind::kRef:
    case BackendKind::kCpu:
      return OkStatus();
    case BackendKind::kCuda:
      return Unsupported(
          "batching several sequences is not supported on the CUDA backend (the CUDA pass runs "
          "one sequence per call; not yet verified on a device)");
  }
  return InvalidArgument("unknown backend kind {}", static_cast<int>(kind));
}

BackendAvailability DetectBackends() {
  BackendAvailability a;
  a.cuda_device = CudaAvailable();
  a.cuda_batching = CheckBatching(BackendKind::kCuda).ok();
  return a;
}

BackendKind ResolveAutoBackend(const BackendAvailability& available) {
  if (available.cuda_device && available.cuda_batching) return BackendKind::kCuda;
  return BackendKind::kCpu;
}

}  // namespace qwenrt

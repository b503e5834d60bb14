// The one place that decides where batching runs and what AUTO picks (model/backend_choice.h):
// batching on kRef and kCpu, refused on kCuda with UNSUPPORTED by ForwardBatch and Engine::Create;
// AUTO never resolves to a backend that batching refuses, with or without an (emulated) GPU. The
// engine's side (Engine::Create on kCuda, an engine on kRef) is in engine_test.cpp.
#include "model/backend_choice.h"

#include <catch2/catch.hpp>
#include <string>

#include "ops/cuda_device.h"

namespace qwenrt::test {

TEST_CASE("CheckBatching: kRef and kCpu batch; kCuda is UNSUPPORTED until verified on a device",
          "[backend][batch]") {
  CHECK(CheckBatching(BackendKind::kRef).ok());
  CHECK(CheckBatching(BackendKind::kCpu).ok());
  const Status cuda = CheckBatching(BackendKind::kCuda);
  CHECK(cuda.code() == StatusCode::kUnsupported);
  CHECK(cuda.message().find("CUDA") != std::string::npos);
}

TEST_CASE("ResolveAutoBackend: CUDA only when a device is present and it batches",
          "[backend][auto]") {
  // Emulated availability: the decision is a pure function of it.
  CHECK(ResolveAutoBackend({false, false}) == BackendKind::kCpu);
  CHECK(ResolveAutoBackend({false, true}) == BackendKind::kCpu);
  CHECK(ResolveAutoBackend({true, false}) == BackendKind::kCpu);  // a GPU, batching unverified
  CHECK(ResolveAutoBackend({true, true}) == BackendKind::kCuda);
  // Whatever the host has, AUTO's pick is one the batching engine accepts.
  for (bool device : {false, true}) {
    BackendAvailability a;
    a.cuda_device = device;
    a.cuda_batching = CheckBatching(BackendKind::kCuda).ok();
    INFO("cuda_device " << device);
    CHECK(CheckBatching(ResolveAutoBackend(a)).ok());
  }
  // The real detection agrees with the parts it is made of.
  const BackendAvailability real = DetectBackends();
  CHECK(real.cuda_device == CudaAvailable());
  CHECK(real.cuda_batching == CheckBatching(BackendKind::kCuda).ok());
  CHECK(CheckBatching(ResolveAutoBackend(real)).ok());
}

}  // namespace qwenrt::test

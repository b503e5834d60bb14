// Device memory, pinned host memory, streams and copies for the device-resident forward pass
// (cuda_kernels.h): thin wrappers over the CUDA runtime that turn every failure into a Status.
//
// Semantics:
//   - Copies and Memset are enqueued on `stream` (cudaMemcpyAsync / cudaMemsetAsync), so they are
//     ordered with the kernels launched on it. CopyToHost also synchronises the stream: the host
//     buffer holds the data when it returns. CopyToDevice from pageable memory returns once the
//     source has been staged (the host buffer may be reused); from pinned memory (MallocHost) the
//     source must stay untouched until the stream reaches the copy.
//   - Zero-byte copies and memsets return OK without calling CUDA (any pointers, even nullptr).
//   - Malloc of 0 bytes allocates 1 byte, so a successful Malloc always yields a valid, distinct
//     pointer. Free / FreeHost / StreamDestroy of nullptr are no-ops.
//   - Streams are non-blocking: work on the legacy default stream (the cuda_ops.h helpers, the
//     one-time weight upload) neither waits for them nor breaks a graph capture running on them.
//     Nothing shares buffers across the two, so no ordering between them is needed.
// Argument errors (null pointer with bytes > 0) are INVALID_ARGUMENT and are detected before any
// CUDA call; CUDA failures are DEVICE with the CUDA error text, and leave the runtime's last-error
// state clear (a sticky error, one that breaks the context, still fails every later call).
#include <string>

#include "common.cuh"
#include "ops/cuda_kernels.h"

namespace qwenrt::cuda {
namespace {

// Enqueues one copy of `bytes` (none when 0) after checking the pointers.
Status Copy(const char* what, void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
            Stream stream) {
  if (bytes == 0) return OkStatus();
  if (dst == nullptr || src == nullptr)
    return CudaInvalidArgument(std::string("cuda::") + what + ": null pointer");
  QWENRT_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, kind, AsCuda(stream)));
  return OkStatus();
}

}  // namespace

Status Malloc(void** ptr, size_t bytes) {
  if (ptr == nullptr) return CudaInvalidArgument("cuda::Malloc: null output pointer");
  *ptr = nullptr;
  void* p = nullptr;
  QWENRT_CUDA_TRY(cudaMalloc(&p, bytes == 0 ? 1 : bytes));
  *ptr = p;
  return OkStatus();
}

void Free(void* ptr) {
  if (ptr != nullptr) cudaFree(ptr);  // errors here are sticky ones a later call reports
}

Status StreamCreate(Stream* stream) {
  if (stream == nullptr) return CudaInvalidArgument("cuda::StreamCreate: null output pointer");
  *stream = nullptr;
  cudaStream_t s = nullptr;
  QWENRT_CUDA_TRY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  *stream = s;
  return OkStatus();
}

void StreamDestroy(Stream stream) {
  if (stream != nullptr) cudaStreamDestroy(AsCuda(stream));
}

Status StreamSynchronize(Stream stream) {
  QWENRT_CUDA_TRY(cudaStreamSynchronize(AsCuda(stream)));
  return OkStatus();
}

Status CopyToDevice(void* dst, const void* src_host, size_t bytes, Stream stream) {
  return Copy("CopyToDevice", dst, src_host, bytes, cudaMemcpyHostToDevice, stream);
}

Status CopyToHost(void* dst_host, const void* src, size_t bytes, Stream stream) {
  if (bytes == 0) return OkStatus();
  QWENRT_RETURN_IF_ERROR(Copy("CopyToHost", dst_host, src, bytes, cudaMemcpyDeviceToHost, stream));
  return StreamSynchronize(stream);
}

Status CopyToHostAsync(void* dst_pinned, const void* src, size_t bytes, Stream stream) {
  return Copy("CopyToHostAsync", dst_pinned, src, bytes, cudaMemcpyDeviceToHost, stream);
}

Status CopyOnDevice(void* dst, const void* src, size_t bytes, Stream stream) {
  return Copy("CopyOnDevice", dst, src, bytes, cudaMemcpyDeviceToDevice, stream);
}

Status Memset(void* dst, int value, size_t bytes, Stream stream) {
  if (bytes == 0) return OkStatus();
  if (dst == nullptr) return CudaInvalidArgument("cuda::Memset: null pointer");
  QWENRT_CUDA_TRY(cudaMemsetAsync(dst, value, bytes, AsCuda(stream)));
  return OkStatus();
}

Status MallocHost(void** ptr, size_t bytes) {
  if (ptr == nullptr) return CudaInvalidArgument("cuda::MallocHost: null output pointer");
  *ptr = nullptr;
  void* p = nullptr;
  QWENRT_CUDA_TRY(cudaMallocHost(&p, bytes == 0 ? 1 : bytes));
  *ptr = p;
  return OkStatus();
}

void FreeHost(void* ptr) {
  if (ptr != nullptr) cudaFreeHost(ptr);
}

Status BeginCapture(Stream stream) {
  QWENRT_CUDA_TRY(cudaStreamBeginCapture(AsCuda(stream), cudaStreamCaptureModeRelaxed));
  return OkStatus();
}

Status EndCapture(Stream stream, Graph* graph) {
  *graph = nullptr;
  cudaGraph_t g = nullptr;
  QWENRT_CUDA_TRY(cudaStreamEndCapture(AsCuda(stream), &g));
  cudaGraphExec_t exec = nullptr;
  const cudaError_t e = cudaGraphInstantiate(&exec, g, 0);
  cudaGraphDestroy(g);
  QWENRT_CUDA_TRY(e);
  *graph = exec;
  return OkStatus();
}

Status GraphLaunch(Graph graph, Stream stream) {
  QWENRT_CUDA_TRY(cudaGraphLaunch(static_cast<cudaGraphExec_t>(graph), AsCuda(stream)));
  return OkStatus();
}

void GraphDestroy(Graph graph) {
  if (graph != nullptr) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(graph));
}

}  // namespace qwenrt::cuda

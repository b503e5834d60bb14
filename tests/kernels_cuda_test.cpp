// The device-pointer launchers of cuda_kernels.h (src/ops/cuda/memory.cu, elementwise.cu, moe.cu,
// causal_conv.cu, rope.cu, attention.cu) against the ref:: ops and small host oracles, on odd
// sizes, plus the split-invariance properties the forward pass relies on: attention of T tokens in
// one launch equals the same tokens one launch each, and the causal conv run in pieces equals one
// run, bit for bit. Every GPU case skips with a warning when there is no CUDA device; the argument
// checks (done before any CUDA call) run everywhere. Built without CUDA, only a stub case remains.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "ops/cuda_device.h"

#ifdef QWENRT_HAVE_CUDA
#include "ops/activations.h"
#include "ops/attention.h"
#include "ops/conv.h"
#include "ops/cuda_kernels.h"
#include "ops/gdn_split.h"
#include "ops/norm.h"
#include "ops/rope.h"
#endif

namespace qwenrt {
namespace {

#ifdef QWENRT_HAVE_CUDA

using test::RandomFloats;

// REQUIRE that a Status is OK, printing it otherwise.
#define REQUIRE_OK(expr)                   \
  do {                                     \
    const ::qwenrt::Status st_ = (expr);   \
    INFO(#expr << ": " << st_.ToString()); \
    REQUIRE(st_.ok());                     \
  } while (0)

// A stream for one test case (StreamCreate / StreamDestroy are under test too).
class TestStream {
 public:
  TestStream() { REQUIRE_OK(cuda::StreamCreate(&stream_)); }
  ~TestStream() { cuda::StreamDestroy(stream_); }
  TestStream(const TestStream&) = delete;
  TestStream& operator=(const TestStream&) = delete;
  cuda::Stream get() const { return stream_; }
  // Surfaces errors of the kernels enqueued so far.
  void Sync() const { REQUIRE_OK(cuda::StreamSynchronize(stream_)); }

 private:
  cuda::Stream stream_ = nullptr;
};

// A device copy of a host vector, made with cuda::Malloc / CopyToDevice and read back with
// CopyToHost (which synchronises the stream, so kernels enqueued before have finished).
template <typename T>
class DeviceArray {
 public:
  DeviceArray(const std::vector<T>& host, const TestStream& stream)
      : n_(host.size()), stream_(stream.get()) {
    REQUIRE_OK(cuda::Malloc(&mem_.ptr, bytes()));
    REQUIRE_OK(cuda::CopyToDevice(mem_.ptr, host.data(), bytes(), stream_));
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;

  T* get() const { return static_cast<T*>(mem_.ptr); }
  size_t bytes() const { return n_ * sizeof(T); }
  std::vector<T> Download() const {
    std::vector<T> host(n_);
    REQUIRE_OK(cuda::CopyToHost(host.data(), mem_.ptr, bytes(), stream_));
    return host;
  }

 private:
  struct Memory {  // a member, so the allocation is freed even when the constructor's REQUIRE
                   // throws
    void* ptr = nullptr;
    ~Memory() { cuda::Free(ptr); }
  };
  Memory mem_;
  size_t n_;
  cuda::Stream stream_;
};

// Checks got against want element-wise: error = |got - want| / max(|want|, floor), NaN/inf where
// want is finite counting as infinite error. Prints the worst element on failure.
void CheckClose(const std::vector<float>& got, const std::vector<float>& want, double tol,
                double floor, const std::string& what) {
  REQUIRE(got.size() == want.size());
  double worst = 0.0;
  size_t worst_i = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    double err =
        std::fabs(double(got[i]) - double(want[i])) / std::max(std::fabs(double(want[i])), floor);
    if (!std::isfinite(got[i]) && std::isfinite(want[i]))
      err = std::numeric_limits<double>::infinity();
    if (!(err <= worst)) {
      worst = err;
      worst_i = i;
    }
  }
  INFO(what << ": max rel error " << worst << " at index " << worst_i << " of " << got.size()
            << " (got " << (got.empty() ? 0.0f : got[worst_i]) << ", want "
            << (want.empty() ? 0.0f : want[worst_i]) << ")");
  CHECK(worst <= tol);
}

// Bitwise equality, printing the first differing element.
void CheckBitIdentical(const std::vector<float>& a, const std::vector<float>& b,
                       const std::string& what) {
  REQUIRE(a.size() == b.size());
  size_t first = a.size(), count = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0) {
      if (count++ == 0) first = i;
    }
  }
  INFO(what << ": " << count << " of " << a.size() << " elements differ; first at index " << first
            << (count ? " (" + std::to_string(a[first]) + " vs " + std::to_string(b[first]) + ")"
                      : std::string()));
  CHECK(count == 0);
}

constexpr StatusCode kInvalid = StatusCode::kInvalidArgument;

#endif  // QWENRT_HAVE_CUDA

}  // namespace

#ifdef QWENRT_HAVE_CUDA

// --- without a device: argument checks come before any CUDA call
// -----------------------------------

TEST_CASE("cuda launchers reject bad arguments and skip empty work without touching the device",
          "[cuda]") {
  float f = 0.0f;
  float* p = &f;  // never dereferenced: every call below fails or returns before launching
  const int32_t idx = 0;
  const uint8_t flag = 1;

  // Memory.
  CHECK(cuda::Malloc(nullptr, 16).code() == kInvalid);
  CHECK(cuda::MallocHost(nullptr, 16).code() == kInvalid);
  CHECK(cuda::StreamCreate(nullptr).code() == kInvalid);
  CHECK(cuda::CopyToDevice(nullptr, p, 4, nullptr).code() == kInvalid);
  CHECK(cuda::CopyToDevice(p, nullptr, 4, nullptr).code() == kInvalid);
  CHECK(cuda::CopyToHost(nullptr, p, 4, nullptr).code() == kInvalid);
  CHECK(cuda::CopyOnDevice(p, nullptr, 4, nullptr).code() == kInvalid);
  CHECK(cuda::Memset(nullptr, 0, 4, nullptr).code() == kInvalid);
  CHECK(cuda::CopyToDevice(nullptr, nullptr, 0, nullptr).ok());
  CHECK(cuda::CopyToHost(nullptr, nullptr, 0, nullptr).ok());
  CHECK(cuda::CopyOnDevice(nullptr, nullptr, 0, nullptr).ok());
  CHECK(cuda::Memset(nullptr, 0, 0, nullptr).ok());
  cuda::Free(nullptr);
  cuda::FreeHost(nullptr);
  cuda::StreamDestroy(nullptr);

  // Element-wise: negative sizes, null pointers with work to do, empty work with null pointers.
  CHECK(cuda::LaunchL2NormScale(p, -1, 4, 1e-6f, 1.0f, nullptr).code() == kInvalid);
  CHECK(cuda::LaunchL2NormScale(p, 2, -4, 1e-6f, 1.0f, nullptr).code() == kInvalid);
  CHECK(cuda::LaunchL2NormScale(nullptr, 2, 4, 1e-6f, 1.0f, nullptr).code() == kInvalid);
  CHECK(cuda::LaunchL2NormScale(nullptr, 0, 4, 1e-6f, 1.0f, nullptr).ok());
  CHECK(cuda::LaunchAdd(p, p, -1, nullptr).code() == kInvalid);
  CHECK(cuda::LaunchAdd(p, nullptr, 3, nullptr).code() == kInvalid);
  CHECK(cuda::LaunchAdd(nullptr, nullptr, 0, nullptr).ok());
  CHECK(cuda::LaunchSwiGlu(p, p, -5, nullptr).code() == kInvalid);
  CHECK(cuda::LaunchSwiGlu(nullptr, p, 5, nullptr).code() == kInvalid);
  CHECK(cuda::LaunchSwiGlu(nullptr, nullptr, 0, nullptr).ok());
  CHECK(cuda::LaunchMulSigmoid(p, p, -2, nullptr).code() == kInvalid);
  CHECK(cuda::LaunchMulSigmoid(p, nullptr, 2, nullptr).code() == kInvalid);
  CHECK(cuda::LaunchMulSigmoid(nullptr, nullptr, 0, nullptr).ok());
  CHECK(cuda::LaunchGdnGates(p, p, p, p, -1, 4, nullptr).code() == kInvalid);
  CHECK(cuda::LaunchGdnGates(p, p, p, p, 1, -4, nullptr).code() == kInvalid);
  CHECK(cuda::LaunchGdnGates(p, p, nullptr, p, 1, 4, nullptr).code() == kInvalid);
  CHECK(cuda::LaunchGdnGates(nullptr, nullptr, nullptr, nullptr, 0, 4, nullptr).ok());
  CHECK(cuda::LaunchCopyColumns(p, -1, 8, 0, 4, p, nullptr).code() == kInvalid);
  CHECK(cuda::LaunchCopyColumns(p, 2, 8, 5, 4, p, nullptr).code() == kInvalid);  // 5 + 4 > 8
  CHECK(cuda::LaunchCopyColumns(p, 2, 8, -1, 4, p, nullptr).code() == kInvalid);
  CHECK(cuda::LaunchCopyColumns(p, 2, 8, 0, -4, p, nullptr).code() == kInvalid);
  CHECK(cuda::LaunchCopyColumns(p, 2, 8, 4, 4, nullptr, nullptr).code() == kInvalid);
  CHECK(cuda::LaunchCopyColumns(nullptr, 0, 8, 4, 4, nullptr, nullptr).ok());

  // MoE.
  CHECK(cuda::LaunchMoeGather(p, &idx, -1, 4, p, nullptr).code() == kInvalid);
  CHECK(cuda::LaunchMoeGather(p, nullptr, 1, 4, p, nullptr).code() == kInvalid);
  CHECK(cuda::LaunchMoeGather(nullptr, nullptr, 0, 4, nullptr, nullptr).ok());
  CHECK(cuda::LaunchMoeScatter(p, &idx, 1, -4, p, nullptr).code() == kInvalid);
  CHECK(cuda::LaunchMoeScatter(p, &idx, 1, 4, nullptr, nullptr).code() == kInvalid);
  CHECK(cuda::LaunchMoeScatter(nullptr, nullptr, 3, 0, nullptr, nullptr).ok());
  CHECK(cuda::LaunchMoeCombine(p, p, 2, -1, 4, p, nullptr).code() == kInvalid);
  CHECK(cuda::LaunchMoeCombine(nullptr, p, 2, 2, 4, p, nullptr).code() == kInvalid);
  CHECK(cuda::LaunchMoeCombine(nullptr, nullptr, 0, 2, 4, nullptr, nullptr).ok());
  CHECK(cuda::LaunchAddSigmoidGated(p, p, p, -2, 4, nullptr).code() == kInvalid);
  CHECK(cuda::LaunchAddSigmoidGated(p, p, nullptr, 2, 4, nullptr).code() == kInvalid);
  CHECK(cuda::LaunchAddSigmoidGated(nullptr, nullptr, nullptr, 2, 0, nullptr).ok());

  // Sequence ops.
  CHECK(cuda::LaunchCausalConvSilu(CausalConvShape{-1, 8, 4}, p, p, p, p, nullptr).code() ==
        kInvalid);
  CHECK(cuda::LaunchCausalConvSilu(CausalConvShape{2, 0, 4}, p, p, p, p, nullptr).code() ==
        kInvalid);
  CHECK(cuda::LaunchCausalConvSilu(CausalConvShape{2, 8, 0}, p, p, p, p, nullptr).code() ==
        kInvalid);
  CHECK(cuda::LaunchCausalConvSilu(CausalConvShape{2, 8, 4}, p, p, nullptr, p, nullptr).code() ==
        kInvalid);
  CHECK(cuda::LaunchCausalConvSilu(CausalConvShape{2, 8, 4}, nullptr, p, p, p, nullptr).code() ==
        kInvalid);
  CHECK(cuda::LaunchCausalConvSilu(CausalConvShape{0, 8, 4}, nullptr, nullptr, nullptr, nullptr,
                                   nullptr)
            .ok());
  CHECK(cuda::LaunchRope(p, -1, 2, 8, 0, 8, 1e4f, 1.0f, nullptr, nullptr).code() == kInvalid);
  CHECK(cuda::LaunchRope(p, 1, 2, 8, 0, 10, 1e4f, 1.0f, nullptr, nullptr).code() ==
        kInvalid);  // R > Dh
  CHECK(cuda::LaunchRope(p, 1, 2, 8, 0, -2, 1e4f, 1.0f, nullptr, nullptr).code() == kInvalid);
  CHECK(cuda::LaunchRope(nullptr, 1, 2, 8, 0, 8, 1e4f, 1.0f, &flag, nullptr).code() == kInvalid);
  CHECK(cuda::LaunchRope(nullptr, 0, 2, 8, 0, 8, 1e4f, 1.0f, nullptr, nullptr).ok());
  CHECK(cuda::LaunchRope(nullptr, 3, 2, 8, 0, 0, 1e4f, 1.0f, nullptr, nullptr)
            .ok());  // nothing rotates
  const AttentionShape bad_shapes[] = {{-1, 0, 4, 2, 8}, {1, -1, 4, 2, 8}, {1, 0, 0, 1, 8},
                                       {1, 0, 4, 0, 8},  {1, 0, 4, 3, 8},  {1, 0, 4, 2, 0}};
  for (const AttentionShape& s : bad_shapes) {
    INFO("T " << s.T << " n_past " << s.n_past << " H " << s.H << " Hkv " << s.Hkv << " Dh "
              << s.Dh);
    CHECK(cuda::LaunchAttention(s, p, p, p, p, p, 1 << 30, nullptr).code() == kInvalid);
  }
  CHECK(cuda::LaunchAttention(AttentionShape{1, 0, 4, 2, 513}, p, p, p, p, p, 1 << 30, nullptr)
            .code() == StatusCode::kUnsupported);
  CHECK(
      cuda::LaunchAttention(AttentionShape{1, 0, 4, 2, 512}, p, nullptr, p, p, p, 1 << 30, nullptr)
          .code() == kInvalid);
  CHECK(
      cuda::LaunchAttention(AttentionShape{1, 0, 4, 2, 512}, p, p, p, p, nullptr, 1 << 30, nullptr)
          .code() == kInvalid);  // no scratch
  CHECK(cuda::LaunchAttention(AttentionShape{1, 0, 4, 2, 64}, p, p, p, p, p, 100, nullptr).code() ==
        kInvalid);  // scratch too small for one token
  CHECK(cuda::LaunchAttention(AttentionShape{0, 5, 4, 2, 64}, nullptr, nullptr, nullptr, nullptr,
                              nullptr, 0, nullptr)
            .ok());
}

TEST_CASE("cuda memory: allocation, copies, memset and streams", "[cuda]") {
  if (!CudaAvailable()) {
    void* ptr = reinterpret_cast<void*>(1);
    Status s = cuda::Malloc(&ptr, 64);
    INFO(s.ToString());
    CHECK(s.code() == StatusCode::kDevice);  // a clean error, not a crash
    CHECK(ptr == nullptr);
    WARN("no CUDA device: skipped");
    return;
  }
  TestStream stream;
  const std::vector<float> a = RandomFloats(1000, -1.0f, 1.0f, 1);
  DeviceArray<float> da(a, stream);
  CHECK(da.Download() == a);

  // CopyOnDevice, then a partial Memset (bytes 0 of the first 10 floats).
  DeviceArray<float> db(std::vector<float>(1000, 5.0f), stream);
  REQUIRE_OK(cuda::CopyOnDevice(db.get(), da.get(), da.bytes(), stream.get()));
  REQUIRE_OK(cuda::Memset(db.get(), 0, 10 * sizeof(float), stream.get()));
  std::vector<float> want = a;
  std::fill(want.begin(), want.begin() + 10, 0.0f);
  CHECK(db.Download() == want);

  // Pinned host memory as a copy source and destination; a 0-byte Malloc gives a real pointer.
  void* pinned = nullptr;
  REQUIRE_OK(cuda::MallocHost(&pinned, da.bytes()));
  REQUIRE(pinned != nullptr);
  REQUIRE_OK(cuda::CopyToHost(pinned, da.get(), da.bytes(), stream.get()));
  CHECK(std::memcmp(pinned, a.data(), da.bytes()) == 0);
  std::fill_n(static_cast<float*>(pinned), 1000, 2.5f);
  REQUIRE_OK(cuda::CopyToDevice(db.get(), pinned, db.bytes(), stream.get()));
  stream.Sync();
  cuda::FreeHost(pinned);
  CHECK(db.Download() == std::vector<float>(1000, 2.5f));
  void* empty = nullptr;
  REQUIRE_OK(cuda::Malloc(&empty, 0));
  CHECK(empty != nullptr);
  cuda::Free(empty);

  // Absurd sizes fail with DEVICE, not a crash, and leave no stale error behind: the next launch
  // (whose launcher checks cudaGetLastError) succeeds.
  void* huge = nullptr;
  CHECK(cuda::Malloc(&huge, size_t{1} << 60).code() == StatusCode::kDevice);
  CHECK(huge == nullptr);
  REQUIRE_OK(cuda::LaunchAdd(db.get(), da.get(), 1000, stream.get()));
  stream.Sync();
  std::vector<float> sum(1000);
  for (size_t i = 0; i < sum.size(); ++i) sum[i] = 2.5f + a[i];
  CHECK(db.Download() == sum);
}

// --- element-wise ops
// ------------------------------------------------------------------------------

TEST_CASE("cuda Add / SwiGlu / MulSigmoid match ref", "[cuda]") {
  QWENRT_SKIP_WITHOUT_GPU();
  TestStream stream;
  uint32_t seed = 10;
  // 1 << 24 + 3 elements exceed the grid cap (65536 blocks x 256): the grid-stride loop is
  // exercised.
  for (int64_t n : {int64_t{1}, int64_t{129}, int64_t{100003}, (int64_t{1} << 24) + 3}) {
    INFO("n " << n);
    const size_t un = static_cast<size_t>(n);
    const std::vector<float> x = RandomFloats(un, -30.0f, 30.0f, seed++);
    const std::vector<float> y = RandomFloats(un, -30.0f, 30.0f, seed++);
    {
      std::vector<float> want = x;
      ref::Add(want.data(), y.data(), n);
      DeviceArray<float> dx(x, stream), dy(y, stream);
      REQUIRE_OK(cuda::LaunchAdd(dx.get(), dy.get(), n, stream.get()));
      CheckBitIdentical(dx.Download(), want, "Add");  // one IEEE addition: exact
    }
    {
      std::vector<float> want = y;
      ref::SwiGlu(x.data(), want.data(), n);
      DeviceArray<float> dg(x, stream), du(y, stream);
      REQUIRE_OK(cuda::LaunchSwiGlu(dg.get(), du.get(), n, stream.get()));
      CheckClose(du.Download(), want, 1e-5, 1e-30, "SwiGlu");
      CHECK(dg.Download() == x);  // gate untouched
    }
    {
      std::vector<float> want = x;
      ref::MulSigmoid(want.data(), y.data(), 1, n, n);
      DeviceArray<float> dx(x, stream), dg(y, stream);
      REQUIRE_OK(cuda::LaunchMulSigmoid(dx.get(), dg.get(), n, stream.get()));
      CheckClose(dx.Download(), want, 1e-5, 1e-30, "MulSigmoid");
    }
  }
  stream.Sync();
}

TEST_CASE("cuda L2NormScale matches ref::L2Norm times the scale", "[cuda]") {
  QWENRT_SKIP_WITHOUT_GPU();
  TestStream stream;
  struct Case {
    int64_t rows, n;
    float scale;
  };
  // 70000 rows exceed nothing but exercise many blocks; n = 1 and odd n test the lane loop.
  const Case cases[] = {{7, 129, 1.0f},
                        {33, 128, 1.0f / std::sqrt(128.0f)},
                        {1, 1, 0.5f},
                        {5, 1000, 2.0f},
                        {70000, 16, 0.25f}};
  uint32_t seed = 40;
  for (const Case& c : cases) {
    INFO("rows " << c.rows << " n " << c.n << " scale " << c.scale);
    std::vector<float> x = RandomFloats(static_cast<size_t>(c.rows * c.n), -2.0f, 2.0f, seed++);
    std::fill(x.begin(), x.begin() + c.n, 0.0f);  // a zero row: the eps clamp, result 0
    if (c.rows > 1) std::fill(x.begin() + c.n, x.begin() + 2 * c.n, 1e-9f);  // norm below eps
    std::vector<float> want = x;
    ref::L2Norm(want.data(), c.rows, c.n, 1e-6f);
    for (float& v : want) v *= c.scale;
    DeviceArray<float> dx(x, stream);
    REQUIRE_OK(cuda::LaunchL2NormScale(dx.get(), c.rows, c.n, 1e-6f, c.scale, stream.get()));
    CheckClose(dx.Download(), want, 1e-5, 1e-6, "L2NormScale");
  }
}

TEST_CASE("cuda GdnGates matches ref::GdnGates", "[cuda]") {
  QWENRT_SKIP_WITHOUT_GPU();
  TestStream stream;
  for (int64_t T : {1, 5}) {
    const int64_t Hv = 7;
    INFO("T " << T << " Hv " << Hv);
    // alpha + dt_bias spans both softplus branches (threshold 20).
    const std::vector<float> alpha =
        RandomFloats(static_cast<size_t>(T * Hv), -25.0f, 25.0f, 70 + T);
    const std::vector<float> beta =
        RandomFloats(static_cast<size_t>(T * Hv), -10.0f, 10.0f, 80 + T);
    const std::vector<float> ssm_a = RandomFloats(static_cast<size_t>(Hv), -8.0f, -0.1f, 90);
    const std::vector<float> dt_bias = RandomFloats(static_cast<size_t>(Hv), -2.0f, 2.0f, 91);
    std::vector<float> want_a = alpha, want_b = beta;
    ref::GdnGates(want_a.data(), want_b.data(), ssm_a.data(), dt_bias.data(), T, Hv);
    DeviceArray<float> da(alpha, stream), db(beta, stream), dsa(ssm_a, stream),
        ddt(dt_bias, stream);
    REQUIRE_OK(cuda::LaunchGdnGates(da.get(), db.get(), dsa.get(), ddt.get(), T, Hv, stream.get()));
    CheckClose(da.Download(), want_a, 1e-5, 1e-30, "GdnGates alpha");
    CheckClose(db.Download(), want_b, 1e-5, 1e-30, "GdnGates beta");
  }
}

TEST_CASE("cuda CopyColumns copies a column range of every row", "[cuda]") {
  QWENRT_SKIP_WITHOUT_GPU();
  TestStream stream;
  struct Case {
    int64_t rows, stride, offset, width;
  };
  const Case cases[] = {{7, 129, 33, 40}, {1, 10, 0, 10}, {5, 64, 63, 1}, {300, 96, 32, 64}};
  for (const Case& c : cases) {
    INFO("rows " << c.rows << " stride " << c.stride << " offset " << c.offset << " width "
                 << c.width);
    const std::vector<float> src =
        RandomFloats(static_cast<size_t>(c.rows * c.stride), -1.0f, 1.0f, 5);
    std::vector<float> want(static_cast<size_t>(c.rows * c.width));
    for (int64_t r = 0; r < c.rows; ++r) {
      for (int64_t i = 0; i < c.width; ++i)
        want[r * c.width + i] = src[r * c.stride + c.offset + i];
    }
    DeviceArray<float> ds(src, stream), dd(std::vector<float>(want.size(), -7.0f), stream);
    REQUIRE_OK(cuda::LaunchCopyColumns(ds.get(), c.rows, c.stride, c.offset, c.width, dd.get(),
                                       stream.get()));
    CheckBitIdentical(dd.Download(), want, "CopyColumns");
  }
}

// --- mixture of experts
// ---------------------------------------------------------------------------

TEST_CASE("cuda MoeGather / MoeScatter move whole rows", "[cuda]") {
  QWENRT_SKIP_WITHOUT_GPU();
  TestStream stream;
  const int64_t E = 129, src_rows = 10;
  const std::vector<float> src = RandomFloats(static_cast<size_t>(src_rows * E), -1.0f, 1.0f, 11);
  {
    const std::vector<int32_t> rows = {3, 0, 9, 3, 7};  // repeats are fine for a gather
    const int64_t n = static_cast<int64_t>(rows.size());
    std::vector<float> want(static_cast<size_t>(n * E));
    for (int64_t i = 0; i < n; ++i) std::copy_n(src.begin() + rows[i] * E, E, want.begin() + i * E);
    DeviceArray<float> ds(src, stream), dd(std::vector<float>(want.size(), -7.0f), stream);
    DeviceArray<int32_t> dr(rows, stream);
    REQUIRE_OK(cuda::LaunchMoeGather(ds.get(), dr.get(), n, E, dd.get(), stream.get()));
    CheckBitIdentical(dd.Download(), want, "MoeGather");
  }
  {
    const std::vector<int32_t> rows = {4, 1, 8};  // distinct destination rows; the others untouched
    const int64_t n = static_cast<int64_t>(rows.size());
    std::vector<float> want(static_cast<size_t>(src_rows * E), -7.0f);
    for (int64_t i = 0; i < n; ++i) std::copy_n(src.begin() + i * E, E, want.begin() + rows[i] * E);
    DeviceArray<float> ds(src, stream), dd(std::vector<float>(want.size(), -7.0f), stream);
    DeviceArray<int32_t> dr(rows, stream);
    REQUIRE_OK(cuda::LaunchMoeScatter(ds.get(), dr.get(), n, E, dd.get(), stream.get()));
    CheckBitIdentical(dd.Download(), want, "MoeScatter");
  }
}

TEST_CASE("cuda MoeCombine and AddSigmoidGated match the forward pass's host loops", "[cuda]") {
  QWENRT_SKIP_WITHOUT_GPU();
  TestStream stream;
  for (int64_t T : {1, 5}) {
    const int64_t K = 3, E = 129;
    INFO("T " << T << " K " << K << " E " << E);
    const std::vector<float> yslot =
        RandomFloats(static_cast<size_t>(T * K * E), -1.0f, 1.0f, 20 + T);
    const std::vector<float> weights = RandomFloats(static_cast<size_t>(T * K), 0.0f, 1.0f, 30 + T);
    const std::vector<float> y = RandomFloats(static_cast<size_t>(T * E), -1.0f, 1.0f, 40 + T);
    const std::vector<float> gate = RandomFloats(static_cast<size_t>(T), -4.0f, 4.0f, 50 + T);
    // As forward.cpp's Moe(): zero, add the K slots in order, then the gated shared expert.
    std::vector<float> want(static_cast<size_t>(T * E), 0.0f);
    for (int64_t t = 0; t < T; ++t) {
      for (int64_t j = 0; j < K; ++j) {
        for (int64_t e = 0; e < E; ++e)
          want[t * E + e] += weights[t * K + j] * yslot[(t * K + j) * E + e];
      }
    }
    DeviceArray<float> dys(yslot, stream), dw(weights, stream), dy(y, stream), dg(gate, stream);
    DeviceArray<float> dmix(std::vector<float>(want.size(), -7.0f), stream);
    REQUIRE_OK(cuda::LaunchMoeCombine(dys.get(), dw.get(), T, K, E, dmix.get(), stream.get()));
    // Absolute error for small sums (cancellation): floor 1 on values of magnitude <= 3.
    CheckClose(dmix.Download(), want, 1e-6, 1.0, "MoeCombine");
    for (int64_t t = 0; t < T; ++t) {
      const float gamma = Sigmoid(gate[t]);
      for (int64_t e = 0; e < E; ++e) want[t * E + e] += gamma * y[t * E + e];
    }
    REQUIRE_OK(cuda::LaunchAddSigmoidGated(dmix.get(), dy.get(), dg.get(), T, E, stream.get()));
    CheckClose(dmix.Download(), want, 1e-6, 1.0, "AddSigmoidGated");
  }
  // K = 0 (no routed expert) gives zeros.
  DeviceArray<float> dmix(std::vector<float>(8, -7.0f), stream);
  REQUIRE_OK(cuda::LaunchMoeCombine(nullptr, nullptr, 2, 0, 4, dmix.get(), stream.get()));
  CHECK(dmix.Download() == std::vector<float>(8, 0.0f));
}

// --- causal conv
// -----------------------------------------------------------------------------------

TEST_CASE("cuda CausalConvSilu matches ref (outputs and state), T < Kc-1 included", "[cuda]") {
  QWENRT_SKIP_WITHOUT_GPU();
  TestStream stream;
  struct Case {
    int64_t T, C, Kc;
  };
  const Case cases[] = {{9, 129, 4}, {1, 129, 4}, {2, 129, 4}, {3, 64, 4},
                        {5, 33, 1},  {4, 17, 2},  {70, 300, 4}};
  uint32_t seed = 200;
  for (const Case& c : cases) {
    INFO("T " << c.T << " C " << c.C << " Kc " << c.Kc);
    const CausalConvShape shape{c.T, c.C, c.Kc};
    const std::vector<float> x = RandomFloats(static_cast<size_t>(c.T * c.C), -3.0f, 3.0f, seed++);
    const std::vector<float> w = RandomFloats(static_cast<size_t>(c.C * c.Kc), -1.0f, 1.0f, seed++);
    // Kc = 1 has no state: pass a 1-element buffer that must stay untouched.
    const size_t state_n = static_cast<size_t>(std::max<int64_t>(c.C * (c.Kc - 1), 1));
    const std::vector<float> state0 = RandomFloats(state_n, -3.0f, 3.0f, seed++);
    std::vector<float> want_y(x.size()), want_state = state0;
    ref::CausalConvSilu(shape, x.data(), w.data(), want_state.data(), want_y.data());
    DeviceArray<float> dx(x, stream), dw(w, stream), dst(state0, stream);
    DeviceArray<float> dy(std::vector<float>(x.size(), -7.0f), stream);
    REQUIRE_OK(
        cuda::LaunchCausalConvSilu(shape, dx.get(), dw.get(), dst.get(), dy.get(), stream.get()));
    // The rounding error of u scales with sum_j |w_j x_j| (~1-10 here), not with |u| (the GPU fuses
    // multiply-adds): floor 1 makes small (cancelled) outputs absolute. A wrong tap or state entry
    // gives errors of order 1.
    CheckClose(dy.Download(), want_y, 1e-5, 1.0, "conv outputs");
    CheckBitIdentical(dst.Download(), want_state, "conv state (copies of inputs)");
    CHECK(dx.Download() == x);
  }
}

TEST_CASE("cuda CausalConvSilu in pieces 1+3+5 equals one launch of 9 tokens, bit for bit",
          "[cuda]") {
  QWENRT_SKIP_WITHOUT_GPU();
  TestStream stream;
  const int64_t T = 9, C = 129, Kc = 4;
  const std::vector<float> x = RandomFloats(static_cast<size_t>(T * C), -3.0f, 3.0f, 300);
  const std::vector<float> w = RandomFloats(static_cast<size_t>(C * Kc), -1.0f, 1.0f, 301);
  const std::vector<float> state0 =
      RandomFloats(static_cast<size_t>(C * (Kc - 1)), -3.0f, 3.0f, 302);

  DeviceArray<float> dx(x, stream), dw(w, stream), st_whole(state0, stream),
      st_pieces(state0, stream);
  DeviceArray<float> y_whole(std::vector<float>(x.size(), -7.0f), stream);
  DeviceArray<float> y_pieces(std::vector<float>(x.size(), -7.0f), stream);
  REQUIRE_OK(cuda::LaunchCausalConvSilu(CausalConvShape{T, C, Kc}, dx.get(), dw.get(),
                                        st_whole.get(), y_whole.get(), stream.get()));
  int64_t t0 = 0;
  for (int64_t piece : {1, 3, 5}) {
    REQUIRE_OK(cuda::LaunchCausalConvSilu(CausalConvShape{piece, C, Kc}, dx.get() + t0 * C,
                                          dw.get(), st_pieces.get(), y_pieces.get() + t0 * C,
                                          stream.get()));
    t0 += piece;
  }
  REQUIRE(t0 == T);
  const std::vector<float> yw = y_whole.Download(), yp = y_pieces.Download();
  const std::vector<float> sw = st_whole.Download(), sp = st_pieces.Download();
  CheckBitIdentical(yp, yw, "outputs, pieces vs whole");
  CheckBitIdentical(sp, sw, "state, pieces vs whole");

  std::vector<float> want_y(x.size()), want_state = state0;
  ref::CausalConvSilu(CausalConvShape{T, C, Kc}, x.data(), w.data(), want_state.data(),
                      want_y.data());
  CheckClose(yw, want_y, 1e-5, 1.0, "outputs vs ref");
  CheckBitIdentical(sw, want_state, "state vs ref");
}

// --- rope
// ------------------------------------------------------------------------------------------

TEST_CASE("cuda Rope matches ref::Rope", "[cuda]") {
  QWENRT_SKIP_WITHOUT_GPU();
  TestStream stream;
  struct Case {
    int64_t T, heads, Dh, pos0, n_dims;
    bool partial_pairs;  // pair_uses_pos with some pairs pinned to position 0
    float freq_scale;
  };
  const Case cases[] = {
      {5, 6, 96, 0, 64, false, 1.0f},      {5, 6, 96, 37, 96, false, 1.0f},
      {5, 2, 256, 37, 64, true, 1.0f},     {1, 6, 256, 100000, 256, false, 0.25f},
      {3, 1, 128, 262000, 32, true, 1.0f}, {2, 3, 8, 5, 2, false, 1.0f},
  };
  uint32_t seed = 400;
  for (const Case& c : cases) {
    INFO("T " << c.T << " heads " << c.heads << " Dh " << c.Dh << " pos0 " << c.pos0 << " n_dims "
              << c.n_dims << " partial " << c.partial_pairs << " freq_scale " << c.freq_scale);
    const float base = 1e7f;
    std::vector<bool> uses(static_cast<size_t>(c.n_dims / 2), true);
    std::vector<uint8_t> uses_bytes(uses.size(), 1);
    if (c.partial_pairs) {
      for (size_t i = 0; i < uses.size(); i += 3) {
        uses[i] = false;
        uses_bytes[i] = 0;
      }
    }
    const std::vector<float> x =
        RandomFloats(static_cast<size_t>(c.T * c.heads * c.Dh), -2.0f, 2.0f, seed++);
    std::vector<float> want = x;
    RopeParams p{c.n_dims, base, c.freq_scale, c.partial_pairs ? &uses : nullptr, {}};
    ref::Rope(want.data(), c.T, c.heads, c.Dh, c.pos0, p);
    DeviceArray<float> dx(x, stream);
    DeviceArray<uint8_t> dpairs(uses_bytes, stream);
    REQUIRE_OK(cuda::LaunchRope(dx.get(), c.T, c.heads, c.Dh, c.pos0, c.n_dims, base, c.freq_scale,
                                c.partial_pairs ? dpairs.get() : nullptr, stream.get()));
    const std::vector<float> got = dx.Download();
    // sin/cos differ in the last ulps between CUDA and glibc and the GPU fuses x0*c - x1*s: errors
    // ~1e-7 absolute on values of magnitude ~1, so floor 0.1 (a wrong angle gives errors ~1).
    CheckClose(got, want, 1e-4, 0.1, "Rope");
    if (c.n_dims < c.Dh) {  // dims >= R pass through untouched
      bool tail_same = true;
      for (int64_t th = 0; th < c.T * c.heads; ++th) {
        for (int64_t d = c.n_dims; d < c.Dh; ++d)
          tail_same = tail_same && got[th * c.Dh + d] == x[th * c.Dh + d];
      }
      CHECK(tail_same);
    }
  }
}

// --- attention
// -------------------------------------------------------------------------------------

struct AttentionInputs {
  std::vector<float> q, k, v;
};

// q [T, H, Dh] in [-3, 3] so that the softmax is far from uniform; k, v cache rows [n_past+T, Hkv,
// Dh].
AttentionInputs MakeAttentionInputs(const AttentionShape& s, uint32_t seed) {
  AttentionInputs in;
  in.q = RandomFloats(static_cast<size_t>(s.T * s.H * s.Dh), -3.0f, 3.0f, seed);
  in.k = RandomFloats(static_cast<size_t>((s.n_past + s.T) * s.Hkv * s.Dh), -1.0f, 1.0f, seed + 1);
  in.v = RandomFloats(in.k.size(), -1.0f, 1.0f, seed + 2);
  return in;
}

std::vector<float> RefAttention(const AttentionShape& s, const AttentionInputs& in) {
  std::vector<float> out(static_cast<size_t>(s.T * s.H * s.Dh)),
      scores(static_cast<size_t>(s.n_past + s.T));
  ref::Attention(s, in.q.data(), in.k.data(), in.v.data(), out.data(), scores.data());
  return out;
}

TEST_CASE("cuda Attention matches ref::Attention (causal, GQA)", "[cuda]") {
  QWENRT_SKIP_WITHOUT_GPU();
  TestStream stream;
  const AttentionShape shapes[] = {
      {5, 0, 6, 2, 96},    {5, 37, 6, 2, 96},
      {5, 0, 6, 2, 256},   {5, 37, 6, 2, 256},
      {1, 0, 4, 4, 64},    {3, 300, 8, 2, 128},
      {2, 11, 3, 1, 512},  {4, 9, 2, 1, 1},
      {7, 2, 6, 3, 33},    {1, 1000, 2, 1, 256},
      {3, 5000, 2, 1, 64}, {1, 4100, 4, 2, 128},  // 64 chunks of more than 64 keys
      {70, 3, 2, 1, 32},  // more tokens than one pass of the standard scratch
  };
  uint32_t seed = 500;
  for (const AttentionShape& s : shapes) {
    INFO("T " << s.T << " n_past " << s.n_past << " H " << s.H << " Hkv " << s.Hkv << " Dh "
              << s.Dh);
    const AttentionInputs in = MakeAttentionInputs(s, seed);
    seed += 3;
    const std::vector<float> want = RefAttention(s, in);
    DeviceArray<float> dq(in.q, stream), dk(in.k, stream), dv(in.v, stream);
    DeviceArray<float> dout(std::vector<float>(want.size(), -7.0f), stream);
    // The standard scratch, and (second run) room for only 3 tokens per pass: same results.
    const int64_t full = cuda::AttentionScratchFloats(s.H, s.Dh), small = 3 * s.H * 64 * (s.Dh + 2);
    DeviceArray<float> scratch(std::vector<float>(static_cast<size_t>(full), 0.0f), stream);
    REQUIRE_OK(cuda::LaunchAttention(s, dq.get(), dk.get(), dv.get(), dout.get(), scratch.get(),
                                     full, stream.get()));
    const std::vector<float> got = dout.Download();
    REQUIRE_OK(cuda::LaunchAttention(s, dq.get(), dk.get(), dv.get(), dout.get(), scratch.get(),
                                     small, stream.get()));
    CheckBitIdentical(dout.Download(), got, "small scratch vs standard scratch");
    // Outputs are convex combinations of v in [-1, 1]; the rounding error of an output scales with
    // sum_j p_j |v_j| (<= 1), not with |out|: floor 0.1 makes small (cancelled) outputs absolute.
    CheckClose(dout.Download(), want, 1e-4, 0.1, "Attention");
  }
}

TEST_CASE("cuda Attention: 9 tokens in one launch equal 9 one-token launches, bit for bit",
          "[cuda]") {
  QWENRT_SKIP_WITHOUT_GPU();
  TestStream stream;
  for (int64_t Dh : {96, 256}) {
    for (int64_t n_past : {0, 37, 4090}) {  // 4090: the chunking changes at 4096 keys
      const AttentionShape whole{9, n_past, 6, 2, Dh};
      INFO("n_past " << n_past << " Dh " << Dh);
      const AttentionInputs in =
          MakeAttentionInputs(whole, static_cast<uint32_t>(600 + Dh + n_past));
      DeviceArray<float> dq(in.q, stream), dk(in.k, stream), dv(in.v, stream);
      const std::vector<float> init(in.q.size(), -7.0f);
      DeviceArray<float> out_whole(init, stream), out_steps(init, stream);
      const int64_t sf = cuda::AttentionScratchFloats(whole.H, whole.Dh);
      DeviceArray<float> scratch(std::vector<float>(static_cast<size_t>(sf), 0.0f), stream);
      REQUIRE_OK(cuda::LaunchAttention(whole, dq.get(), dk.get(), dv.get(), out_whole.get(),
                                       scratch.get(), sf, stream.get()));
      const int64_t row = whole.H * whole.Dh;  // one token of q / out
      for (int64_t t = 0; t < whole.T; ++t) {  // decode: token t sees cache rows 0 .. n_past + t
        const AttentionShape one{1, n_past + t, whole.H, whole.Hkv, whole.Dh};
        REQUIRE_OK(cuda::LaunchAttention(one, dq.get() + t * row, dk.get(), dv.get(),
                                         out_steps.get() + t * row, scratch.get(), sf,
                                         stream.get()));
      }
      const std::vector<float> w = out_whole.Download(), st = out_steps.Download();
      CheckBitIdentical(st, w, "one-token launches vs one launch");
      CheckClose(w, RefAttention(whole, in), 1e-4, 0.1, "vs ref");
    }
  }
}

#else  // !QWENRT_HAVE_CUDA

TEST_CASE("built without CUDA: no device, the kernel launchers are not compiled", "[cuda]") {
  CHECK(!CudaAvailable());
  WARN("qwenrt built without CUDA: cuda_kernels.h launchers not compiled");
}

#endif  // QWENRT_HAVE_CUDA

}  // namespace qwenrt

#ifdef QWENRT_HAVE_CUDA
namespace qwenrt {
namespace {

// Fused launches of the forward pass: each must equal its unfused form bit for bit.
TEST_CASE(
    "cuda fused launches equal their parts (MatMulMulti, AddRmsNorm, L2NormScaleRows, GdnSplit, "
    "GatedRmsNorm, RmsNormRows, strided MulSigmoid)",
    "[cuda]") {
  QWENRT_SKIP_WITHOUT_GPU();
  TestStream stream;
  const int64_t cols = 96, T = 11;
  const std::vector<float> x = RandomFloats(static_cast<size_t>(T * cols), -1.0f, 1.0f, 900);
  // Two F32 matrices and one BF16 matrix (the top halves of random floats) sharing x.
  const std::vector<float> w0 = RandomFloats(static_cast<size_t>(5 * cols), -1.0f, 1.0f, 901);
  const std::vector<float> w1 = RandomFloats(static_cast<size_t>(130 * cols), -1.0f, 1.0f, 902);
  std::vector<uint16_t> w2(static_cast<size_t>(3 * cols));
  for (size_t i = 0; i < w2.size(); ++i) {
    uint32_t u;
    const float f = w1[i] * 0.5f;
    std::memcpy(&u, &f, sizeof(u));
    w2[i] = static_cast<uint16_t>(u >> 16);
  }
  DeviceArray<float> dx(x, stream), dw0(w0, stream), dw1(w1, stream);
  DeviceArray<uint16_t> dw2(w2, stream);
  const std::vector<float> init(static_cast<size_t>(T * 130), -7.0f);
  DeviceArray<float> y0(init, stream), y1(init, stream), y2(init, stream), z0(init, stream),
      z1(init, stream), z2(init, stream);
  const auto* b0 = reinterpret_cast<const uint8_t*>(dw0.get());
  const auto* b1 = reinterpret_cast<const uint8_t*>(dw1.get());
  const auto* b2 = reinterpret_cast<const uint8_t*>(dw2.get());
  const cuda::MatMulTarget targets[] = {{gguf::Type::F32, b0, cols * 4, 5, y0.get()},
                                        {gguf::Type::F32, b1, cols * 4, 130, y1.get()},
                                        {gguf::Type::BF16, b2, cols * 2, 3, y2.get()}};
  REQUIRE_OK(cuda::LaunchMatMulMulti(targets, 3, cols, dx.get(), T, stream.get()));
  for (int64_t t = 0; t < T; ++t) {  // one token at a time, one matrix at a time
    REQUIRE_OK(cuda::LaunchMatMul(gguf::Type::F32, b0, cols * 4, cols, 5, dx.get() + t * cols,
                                  z0.get() + t * 5, 1, stream.get()));
    REQUIRE_OK(cuda::LaunchMatMul(gguf::Type::F32, b1, cols * 4, cols, 130, dx.get() + t * cols,
                                  z1.get() + t * 130, 1, stream.get()));
    REQUIRE_OK(cuda::LaunchMatMul(gguf::Type::BF16, b2, cols * 2, cols, 3, dx.get() + t * cols,
                                  z2.get() + t * 3, 1, stream.get()));
  }
  CheckBitIdentical(y0.Download(), z0.Download(), "MatMulMulti target 0 vs single launches");
  CheckBitIdentical(y1.Download(), z1.Download(), "MatMulMulti target 1 vs single launches");
  CheckBitIdentical(y2.Download(), z2.Download(), "MatMulMulti target 2 vs single launches");
  CHECK(cuda::LaunchMatMulMulti(targets, 0, cols, dx.get(), T, stream.get()).code() ==
        StatusCode::kInvalidArgument);
  CHECK(
      cuda::LaunchMatMulMulti(targets, cuda::kMaxMatMulTargets + 1, cols, dx.get(), T, stream.get())
          .code() == StatusCode::kInvalidArgument);

  // AddRmsNorm == Add then RmsNorm.
  const int64_t rows = 7, n = 1000;
  const std::vector<float> a = RandomFloats(static_cast<size_t>(rows * n), -2.0f, 2.0f, 903);
  const std::vector<float> m = RandomFloats(a.size(), -2.0f, 2.0f, 904);
  const std::vector<float> g = RandomFloats(static_cast<size_t>(n), 0.5f, 1.5f, 905);
  DeviceArray<float> xa(a, stream), xb(a, stream), dm(m, stream), dg(g, stream), ya(a, stream),
      yb(a, stream);
  REQUIRE_OK(
      cuda::LaunchAddRmsNorm(xa.get(), dm.get(), dg.get(), ya.get(), rows, n, 1e-6f, stream.get()));
  REQUIRE_OK(cuda::LaunchAdd(xb.get(), dm.get(), rows * n, stream.get()));
  REQUIRE_OK(cuda::LaunchRmsNorm(xb.get(), dg.get(), yb.get(), rows, n, 1e-6f, stream.get()));
  CheckBitIdentical(xa.Download(), xb.Download(), "AddRmsNorm: the sum");
  CheckBitIdentical(ya.Download(), yb.Download(), "AddRmsNorm: the norm");

  // L2NormScaleRows from a strided source == CopyColumns then L2NormScale.
  const int64_t Tq = 5, heads = 3, dk = 40, C = 200, offset = 60;  // q at columns 60..179 of C
  const std::vector<float> src = RandomFloats(static_cast<size_t>(Tq * C), -1.0f, 1.0f, 906);
  DeviceArray<float> dsrc(src, stream);
  const std::vector<float> zero(static_cast<size_t>(Tq * heads * dk), 0.0f);
  DeviceArray<float> fused(zero, stream), split(zero, stream);
  REQUIRE_OK(cuda::LaunchL2NormScaleRows(dsrc.get() + offset, C, Tq, heads, dk, 1e-6f, 0.25f,
                                         fused.get(), stream.get()));
  REQUIRE_OK(
      cuda::LaunchCopyColumns(dsrc.get(), Tq, C, offset, heads * dk, split.get(), stream.get()));
  REQUIRE_OK(cuda::LaunchL2NormScale(split.get(), Tq * heads, dk, 1e-6f, 0.25f, stream.get()));
  CheckBitIdentical(fused.Download(), split.Download(), "L2NormScaleRows vs copy + L2NormScale");

  // GdnSplit == two L2NormScaleRows + CopyColumns + GdnGates.
  {
    const int64_t Tg = 3, Hk = 2, Dk = 48, Hv = 4, Dv = 40, Cq = Hk * Dk, Cv = Hv * Dv,
                  Cg = 2 * Cq + Cv;
    const std::vector<float> conv = RandomFloats(static_cast<size_t>(Tg * Cg), -1.0f, 1.0f, 907);
    const std::vector<float> ab = RandomFloats(static_cast<size_t>(Tg * Hv), -3.0f, 3.0f, 908);
    const std::vector<float> a_h = RandomFloats(static_cast<size_t>(Hv), -2.0f, -0.1f, 909);
    const std::vector<float> dt = RandomFloats(static_cast<size_t>(Hv), -1.0f, 1.0f, 910);
    DeviceArray<float> dconv(conv, stream), ssm_a(a_h, stream), dt_bias(dt, stream);
    const std::vector<float> zq(static_cast<size_t>(Tg * Cq), 0.0f),
        zv(static_cast<size_t>(Tg * Cv), 0.0f);
    DeviceArray<float> q1(zq, stream), k1(zq, stream), v1(zv, stream), al1(ab, stream),
        be1(ab, stream);
    DeviceArray<float> q2(zq, stream), k2(zq, stream), v2(zv, stream), al2(ab, stream),
        be2(ab, stream);
    REQUIRE_OK(cuda::LaunchGdnSplit(dconv.get(), Tg, Hk, Dk, Hv, Dv, 1e-6f, 0.125f, q1.get(),
                                    k1.get(), v1.get(), al1.get(), be1.get(), ssm_a.get(),
                                    dt_bias.get(), stream.get()));
    REQUIRE_OK(cuda::LaunchL2NormScaleRows(dconv.get(), Cg, Tg, Hk, Dk, 1e-6f, 0.125f, q2.get(),
                                           stream.get()));
    REQUIRE_OK(cuda::LaunchL2NormScaleRows(dconv.get() + Cq, Cg, Tg, Hk, Dk, 1e-6f, 1.0f, k2.get(),
                                           stream.get()));
    REQUIRE_OK(cuda::LaunchCopyColumns(dconv.get(), Tg, Cg, 2 * Cq, Cv, v2.get(), stream.get()));
    REQUIRE_OK(cuda::LaunchGdnGates(al2.get(), be2.get(), ssm_a.get(), dt_bias.get(), Tg, Hv,
                                    stream.get()));
    CheckBitIdentical(q1.Download(), q2.Download(), "GdnSplit q");
    CheckBitIdentical(k1.Download(), k2.Download(), "GdnSplit k");
    CheckBitIdentical(v1.Download(), v2.Download(), "GdnSplit v");
    CheckBitIdentical(al1.Download(), al2.Download(), "GdnSplit alpha -> g");
    CheckBitIdentical(be1.Download(), be2.Download(), "GdnSplit beta");
  }

  // GatedRmsNorm == RmsNorm then SwiGlu; RmsNormRows / strided MulSigmoid == CopyColumns then the
  // flat op.
  {
    const int64_t rows2 = 6, n2 = 72;
    const std::vector<float> xo =
        RandomFloats(static_cast<size_t>(2 * rows2 * n2), -2.0f, 2.0f, 911);
    const std::vector<float> zz = RandomFloats(static_cast<size_t>(rows2 * n2), -3.0f, 3.0f, 912);
    const std::vector<float> gw = RandomFloats(static_cast<size_t>(n2), 0.5f, 1.5f, 913);
    const std::vector<float> flat(xo.begin(), xo.begin() + rows2 * n2);
    DeviceArray<float> dxo(xo, stream), dflat(flat, stream), dz(zz, stream), dgw(gw, stream);
    const std::vector<float> zero2(static_cast<size_t>(rows2 * n2), 0.0f);
    DeviceArray<float> out1(zero2, stream), out2(zero2, stream), col(zero2, stream);
    REQUIRE_OK(cuda::LaunchGatedRmsNorm(dflat.get(), dgw.get(), dz.get(), out1.get(), rows2, n2,
                                        1e-6f, stream.get()));
    REQUIRE_OK(
        cuda::LaunchRmsNorm(dflat.get(), dgw.get(), out2.get(), rows2, n2, 1e-6f, stream.get()));
    REQUIRE_OK(cuda::LaunchSwiGlu(dz.get(), out2.get(), rows2 * n2, stream.get()));
    CheckBitIdentical(out1.Download(), out2.Download(), "GatedRmsNorm vs RmsNorm + SwiGlu");

    // xo viewed as [rows2, 2, n2]: the first halves are the rows, the second halves the gates.
    REQUIRE_OK(cuda::LaunchRmsNormRows(dxo.get(), 2 * n2, dgw.get(), out1.get(), rows2, n2, 1e-6f,
                                       stream.get()));
    REQUIRE_OK(cuda::LaunchCopyColumns(dxo.get(), rows2, 2 * n2, 0, n2, col.get(), stream.get()));
    REQUIRE_OK(
        cuda::LaunchRmsNorm(col.get(), dgw.get(), out2.get(), rows2, n2, 1e-6f, stream.get()));
    CheckBitIdentical(out1.Download(), out2.Download(), "RmsNormRows vs CopyColumns + RmsNorm");
    REQUIRE_OK(cuda::LaunchMulSigmoid(out1.get(), dxo.get() + n2, rows2, n2, 2 * n2, stream.get()));
    REQUIRE_OK(cuda::LaunchCopyColumns(dxo.get(), rows2, 2 * n2, n2, n2, col.get(), stream.get()));
    REQUIRE_OK(cuda::LaunchMulSigmoid(out2.get(), col.get(), rows2 * n2, stream.get()));
    CheckBitIdentical(out1.Download(), out2.Download(),
                      "strided MulSigmoid vs CopyColumns + MulSigmoid");
  }
}

}  // namespace
}  // namespace qwenrt
#endif  // QWENRT_HAVE_CUDA

// Min/max weight quantizers of quantize.h. For every block: choose per-sub-block scales that cover
// the data, quantize those scales against an fp16 super-scale rounded *up* (so no sub-block scale
// needs more than its 6 or 8 bits), round the scales up too (so no element clips), then round each
// element.
#include "testing/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace qwenrt {
namespace {

// fp16 of a non-negative v, rounded up so that Fp16ToFp32(result) >= v.
uint16_t Fp16Up(float v) {
  uint16_t h = Fp32ToFp16(v);
  if (Fp16ToFp32(h) < v && h < 0x7BFF) ++h;  // next representable magnitude (positive numbers)
  return h;
}

void QuantizeQ6K(const float* x, BlockQ6K* y, int64_t nb) {
  for (int64_t b = 0; b < nb; ++b, x += kQK_K) {
    BlockQ6K& out = y[b];
    std::memset(&out, 0, sizeof(out));
    float need[16];  // smallest step that keeps group g inside [-32, 31] after rounding
    float max_need = 0;
    for (int g = 0; g < 16; ++g) {
      float amax = 0;
      for (int j = 0; j < 16; ++j) amax = std::max(amax, std::fabs(x[16 * g + j]));
      need[g] = amax / 31.5f;
      max_need = std::max(max_need, need[g]);
    }
    out.d = Fp16Up(max_need / 127);
    const float d = Fp16ToFp32(out.d);
    for (int g = 0; g < 16; ++g) {
      const int sc = d > 0 ? std::min(127, static_cast<int>(std::ceil(need[g] / d))) : 0;
      out.scales[g] = static_cast<int8_t>(sc);
      const float step = d * sc;
      for (int j = 0; j < 16; ++j) {
        const int e = 16 * g + j;
        const int q =
            step > 0 ? std::clamp(static_cast<int>(std::lround(x[e] / step)), -32, 31) : 0;
        const int u = q + 32;
        // docs/spec/gguf-and-quants.md §3.7: element 128n + 32k + l -> ql[64n + l + 32(k%2)] nibble
        // k/2, qh[32n + l] bits 2k.
        const int n = e / 128, k = (e % 128) / 32, l = e % 32;
        out.ql[64 * n + l + 32 * (k % 2)] |= static_cast<uint8_t>((u & 15) << (4 * (k / 2)));
        out.qh[32 * n + l] |= static_cast<uint8_t>((u >> 4) << (2 * k));
      }
    }
  }
}

// Packs 6-bit scales and mins (gguf-and-quants.md §3.5.1 bit picture).
void PackScaleMin(const int sc[8], const int m[8], uint8_t out[12]) {
  for (int j = 0; j < 4; ++j) {
    out[j] = static_cast<uint8_t>((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
    out[j + 4] = static_cast<uint8_t>((m[j] & 63) | ((m[j + 4] >> 4) << 6));
    out[j + 8] = static_cast<uint8_t>((sc[j + 4] & 15) | ((m[j + 4] & 15) << 4));
  }
}

void QuantizeQ4K(const float* x, BlockQ4K* y, int64_t nb) {
  for (int64_t b = 0; b < nb; ++b, x += kQK_K) {
    BlockQ4K& out = y[b];
    std::memset(&out, 0, sizeof(out));
    float lo[8], hi[8], max_min = 0;
    for (int s = 0; s < 8; ++s) {
      lo[s] = 0, hi[s] = 0;  // the range always includes 0, so the min offset is >= 0
      for (int l = 0; l < 32; ++l)
        lo[s] = std::min(lo[s], x[32 * s + l]), hi[s] = std::max(hi[s], x[32 * s + l]);
      max_min = std::max(max_min, -lo[s]);
    }
    out.dmin = Fp16Up(max_min / 63);
    const float dmin = Fp16ToFp32(out.dmin);
    int sc[8], m[8];
    float offset[8], max_need = 0, need[8];
    for (int s = 0; s < 8; ++s) {
      m[s] = dmin > 0 ? std::min(63, static_cast<int>(std::lround(-lo[s] / dmin))) : 0;
      offset[s] = dmin * m[s];
      need[s] = std::max(0.f, hi[s] + offset[s]) / 15;  // step that reaches hi with q = 15
      max_need = std::max(max_need, need[s]);
    }
    out.d = Fp16Up(max_need / 63);
    const float d = Fp16ToFp32(out.d);
    for (int s = 0; s < 8; ++s)
      sc[s] = d > 0 ? std::min(63, static_cast<int>(std::ceil(need[s] / d))) : 0;
    PackScaleMin(sc, m, out.scales);
    for (int s = 0; s < 8; ++s) {
      // Use exactly the products the dequantizer forms (d * sc, dmin * m).
      const float step = d * sc[s], off = dmin * m[s];
      for (int l = 0; l < 32; ++l) {
        const int q =
            step > 0
                ? std::clamp(static_cast<int>(std::lround((x[32 * s + l] + off) / step)), 0, 15)
                : 0;
        out.qs[32 * (s / 2) + l] |= static_cast<uint8_t>(q << (4 * (s % 2)));
      }
    }
  }
}

}  // namespace

bool QuantizeRow(gguf::Type type, const float* x, void* dst, int64_t n) {
  const int64_t elems = BlockElems(type);
  if (elems == 0 || n < 0 || n % elems != 0) return false;
  switch (type) {
    case gguf::Type::F32:
      std::memcpy(dst, x, static_cast<size_t>(n) * sizeof(float));
      return true;
    case gguf::Type::F16: {
      auto* h = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) h[i] = Fp32ToFp16(x[i]);
      return true;
    }
    case gguf::Type::BF16: {
      auto* h = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) h[i] = Fp32ToBf16(x[i]);
      return true;
    }
    case gguf::Type::Q8_0:
      QuantizeRowQ8_0(x, dst, n);
      return true;
    case gguf::Type::Q4_K:
      QuantizeQ4K(x, static_cast<BlockQ4K*>(dst), n / kQK_K);
      return true;
    case gguf::Type::Q6_K:
      QuantizeQ6K(x, static_cast<BlockQ6K*>(dst), n / kQK_K);
      return true;
    default:
      return false;
  }
}

}  // namespace qwenrt

// File blocks -> the row-interleaved records of packed.h. Plain C++: the layout is the same for
// every kernel variant. Each element's integer value is taken exactly as ref::VecDot* reads it.
#include "ops/packed.h"

#include <algorithm>
#include <cstring>

namespace qwenrt {
namespace {

// Q4_K: q(e) in [0, 15] of element e of block x (gguf-and-quants.md §3.5).
inline int Q4(const BlockQ4K& x, int e) {
  const int g = e / 64, h = (e % 64) / 32, l = e % 32;
  return (x.qs[32 * g + l] >> (4 * h)) & 0x0F;
}

// Q5_K: q(e) in [0, 31] (as ref::VecDotQ5K_Q8K decodes it).
inline int Q5(const BlockQ5K& x, int e) {
  const int s = e / 32, l = e % 32;
  return ((x.qs[32 * (s / 2) + l] >> (4 * (s % 2))) & 0x0F) | (((x.qh[l] >> s) & 1) << 4);
}

// Q6_K: u(e) = q6 + 32 in [0, 63] (as ref::VecDotQ6K_Q8K decodes it).
inline int U6(const BlockQ6K& x, int e) {
  const int half = e / 128, k = (e % 128) / 32, l = e % 32;
  const uint8_t* ql = x.ql + 64 * half;
  const uint8_t* qh = x.qh + 32 * half;
  const int lo = (k % 2 == 0 ? ql[l] : ql[l + 32]) >> (4 * (k / 2)) & 0x0F;
  const int hi = (qh[l] >> (2 * k)) & 3;
  return lo | (hi << 4);
}

// Row r of a Q4_K / Q5_K record's four low bits, from the row's 256 values q and its file scales.
void PackKLow(const uint8_t* q, uint16_t d, uint16_t dmin, const uint8_t* scales, int r,
              PackedQ4K* out) {
  out->d[r] = d;
  out->dmin[r] = dmin;
  for (int s = 0; s < 8; ++s) {
    UnpackScaleMinK(scales, s, &out->scales[s][r], &out->mins[s][r]);
    for (int j = 0; j < 4; ++j) {
      for (int i = 0; i < 4; ++i) {
        const int lo = q[32 * s + 4 * j + i] & 0x0F, hi = q[32 * s + 16 + 4 * j + i] & 0x0F;
        out->qs[s][j][4 * r + i] = static_cast<uint8_t>(lo | (hi << 4));
      }
    }
  }
}

void PackQ4K(const BlockQ4K* const* rows, int nrows, int64_t b, PackedQ4K* out) {
  std::memset(out, 0, sizeof(*out));
  for (int r = 0; r < nrows; ++r) {
    const BlockQ4K& x = rows[r][b];
    uint8_t q[kQK_K];  // the row's 256 values, decoded once
    for (int e = 0; e < kQK_K; ++e) q[e] = static_cast<uint8_t>(Q4(x, e));
    PackKLow(q, x.d, x.dmin, x.scales, r, out);
  }
}

void PackQ5K(const BlockQ5K* const* rows, int nrows, int64_t b, PackedQ5K* out) {
  std::memset(out, 0, sizeof(*out));
  for (int r = 0; r < nrows; ++r) {
    const BlockQ5K& x = rows[r][b];
    uint8_t q[kQK_K];
    for (int e = 0; e < kQK_K; ++e) q[e] = static_cast<uint8_t>(Q5(x, e));
    PackKLow(q, x.d, x.dmin, x.scales, r, &out->low);
    for (int s = 0; s < 8; ++s) {
      for (int k = 0; k < 8; ++k) {
        for (int i = 0; i < 4; ++i) {
          const int e = 32 * s + 16 * (k / 4) + 4 * (k % 4) + i;
          out->qh[s][4 * r + i] |= static_cast<uint8_t>((q[e] >> 4) << k);
        }
      }
    }
  }
}

void PackQ6K(const BlockQ6K* const* rows, int nrows, int64_t b, PackedQ6K* out) {
  std::memset(out, 0, sizeof(*out));
  for (int r = 0; r < nrows; ++r) {
    const BlockQ6K& x = rows[r][b];
    out->d[r] = x.d;
    for (int p = 0; p < 8; ++p) {
      out->scales[p][r][0] = x.scales[2 * p];
      out->scales[p][r][1] = x.scales[2 * p + 1];
    }
    uint8_t u[kQK_K];  // the row's 256 values, decoded once
    for (int e = 0; e < kQK_K; ++e) u[e] = static_cast<uint8_t>(U6(x, e));
    for (int g = 0; g < 16; ++g) {
      PackedQ6K::Group& G = out->groups[g];
      const uint8_t* v = u + 16 * g;
      for (int i = 0; i < 4; ++i) {
        const int u0 = v[i], u1 = v[4 + i], u2 = v[8 + i], u3 = v[12 + i];
        G.ql[0][4 * r + i] = static_cast<uint8_t>((u0 & 15) | ((u2 & 15) << 4));
        G.ql[1][4 * r + i] = static_cast<uint8_t>((u1 & 15) | ((u3 & 15) << 4));
        G.qh[4 * r + i] = static_cast<uint8_t>((u0 >> 4) | ((u1 >> 4) << 2) | ((u2 >> 4) << 4) |
                                               ((u3 >> 4) << 6));
      }
    }
  }
}

// Q4_0, IQ4_NL and MXFP4 share the block layout (a scale, 16 nibble bytes); only the decoding and
// the scale (fp16 d, MXFP4's E8M0 exponent e) differ.
template <typename Block, typename Packed>
void PackQ4_0(const Block* const* rows, int nrows, int64_t b, Packed* out) {
  std::memset(out, 0, sizeof(*out));
  for (int r = 0; r < nrows; ++r) {
    for (int s = 0; s < 8; ++s) {
      const Block& x = rows[r][8 * b + s];
      if constexpr (requires { x.e; }) {
        out->e[s][r] = x.e;
      } else {
        out->d[s][r] = x.d;
      }
      for (int j = 0; j < 4; ++j) {
        for (int i = 0; i < 4; ++i) out->qs[s][j][4 * r + i] = x.qs[4 * j + i];
      }
    }
  }
}

// Q4_1 / Q5_0 / Q5_1: the nibbles as PackQ4_0, plus the min and the fifth bits where the type has
// them.
template <typename Block, typename Packed>
void PackLegacy(const Block* const* rows, int nrows, int64_t b, Packed* out) {
  std::memset(out, 0, sizeof(*out));
  for (int r = 0; r < nrows; ++r) {
    for (int s = 0; s < 8; ++s) {
      const Block& x = rows[r][8 * b + s];
      out->d[s][r] = x.d;
      if constexpr (requires { x.m; }) out->m[s][r] = x.m;
      for (int j = 0; j < 4; ++j) {
        for (int i = 0; i < 4; ++i) out->qs[s][j][4 * r + i] = x.qs[4 * j + i];
      }
      if constexpr (requires { x.qh; }) {
        uint32_t qh;
        std::memcpy(&qh, x.qh, sizeof qh);  // bit e: fifth bit of element e
        for (int k = 0; k < 8; ++k) {
          for (int i = 0; i < 4; ++i)
            out->qh[s][4 * r + i] |= static_cast<uint8_t>(((qh >> (4 * k + i)) & 1) << k);
        }
      }
    }
  }
}

void PackQ8_0(const BlockQ8_0* const* rows, int nrows, int64_t b, PackedQ8_0* out) {
  std::memset(out, 0, sizeof(*out));
  for (int r = 0; r < nrows; ++r) {
    for (int s = 0; s < 8; ++s) {
      const BlockQ8_0& x = rows[r][8 * b + s];
      out->d[s][r] = x.d;
      for (int j = 0; j < 8; ++j) {
        for (int i = 0; i < 4; ++i)
          out->qs[s][j][4 * r + i] = static_cast<uint8_t>(x.qs[4 * j + i] + 128);
      }
    }
  }
}

// Q3_K: u(e) = q3 + 4 in [0, 7] (as ref::VecDotQ3K_Q8K decodes it, plus 4).
inline int U3(const BlockQ3K& x, int e) {
  const int h = e / 128, k = (e % 128) / 32, l = e % 32;
  return ((x.qs[32 * h + l] >> (2 * k)) & 3) | (((x.hmask[l] >> (e / 32)) & 1) << 2);
}

void PackQ2K(const BlockQ2K* const* rows, int nrows, int64_t b, PackedQ2K* out) {
  std::memset(out, 0, sizeof(*out));
  for (int r = 0; r < nrows; ++r) {
    const BlockQ2K& x = rows[r][b];
    out->d[r] = x.d;
    out->dmin[r] = x.dmin;
    for (int g = 0; g < 16; ++g) out->scales[g][r] = x.scales[g];
    for (int p = 0; p < 8; ++p) {
      for (int k = 0; k < 8; ++k) {
        for (int i = 0; i < 4; ++i) {
          const int e = 32 * p + 4 * k + i, h = e / 128, j = (e % 128) / 32, l = e % 32;
          const int q = (x.qs[32 * h + l] >> (2 * j)) & 3;  // as ref::VecDotQ2K_Q8K decodes it
          out->lo[p][k / 4][4 * r + i] |= static_cast<uint8_t>(q << (2 * (k % 4)));
        }
      }
    }
  }
}

void PackQ3K(const BlockQ3K* const* rows, int nrows, int64_t b, PackedQ3K* out) {
  std::memset(out, 0, sizeof(*out));
  for (int r = 0; r < nrows; ++r) {
    const BlockQ3K& x = rows[r][b];
    out->d[r] = x.d;
    uint8_t sc[16];
    UnpackScalesQ3K(x.scales, sc);
    for (int g = 0; g < 16; ++g) out->scales[g][r] = static_cast<int8_t>(sc[g] - 32);
    for (int p = 0; p < 8; ++p) {
      for (int k = 0; k < 8; ++k) {
        for (int i = 0; i < 4; ++i) {
          const int u = U3(x, 32 * p + 4 * k + i);
          out->pairs[p].lo[k / 4][4 * r + i] |= static_cast<uint8_t>((u & 3) << (2 * (k % 4)));
          out->pairs[p].hi[4 * r + i] |= static_cast<uint8_t>((u >> 2) << k);
        }
      }
    }
  }
}

void PackIQ4XS(const BlockIQ4XS* const* rows, int nrows, int64_t b, PackedIQ4XS* out) {
  std::memset(out, 0, sizeof(*out));
  for (int r = 0; r < nrows; ++r) {
    const BlockIQ4XS& x = rows[r][b];
    out->d[r] = x.d;
    for (int s = 0; s < 8; ++s) {
      out->scales[s][r] = static_cast<int8_t>(ScaleIQ4XS(x, s) - 32);
      for (int j = 0; j < 4; ++j) {
        for (int i = 0; i < 4; ++i) out->qs[s][j][4 * r + i] = x.qs[16 * s + 4 * j + i];
      }
    }
  }
}

template <typename Block, typename Packed, void (*Pack)(const Block* const*, int, int64_t, Packed*)>
void PackAll(const uint8_t* src, size_t row_bytes, int64_t cols, int64_t rows, int64_t g0,
             int64_t g1, uint8_t* dst) {
  const int64_t nb = cols / kQK_K;
  Packed* out = reinterpret_cast<Packed*>(dst);
  for (int64_t g = g0; g < g1; ++g) {
    const Block* r[kPackRows];
    const int nrows = static_cast<int>(std::min<int64_t>(kPackRows, rows - g * kPackRows));
    for (int i = 0; i < nrows; ++i)
      r[i] = reinterpret_cast<const Block*>(src + (g * kPackRows + i) * row_bytes);
    for (int64_t b = 0; b < nb; ++b) Pack(r, nrows, b, out + g * nb + b);
  }
}

// One row per type that has a packed layout: its record size and its packer.
struct Layout {
  gguf::Type type;
  size_t record;
  void (*pack)(const uint8_t* src, size_t row_bytes, int64_t cols, int64_t rows, int64_t g0,
               int64_t g1, uint8_t* dst);
};
constexpr Layout kLayouts[] = {
    {gguf::Type::Q4_K, sizeof(PackedQ4K), PackAll<BlockQ4K, PackedQ4K, PackQ4K>},
    {gguf::Type::Q5_K, sizeof(PackedQ5K), PackAll<BlockQ5K, PackedQ5K, PackQ5K>},
    {gguf::Type::Q6_K, sizeof(PackedQ6K), PackAll<BlockQ6K, PackedQ6K, PackQ6K>},
    {gguf::Type::Q2_K, sizeof(PackedQ2K), PackAll<BlockQ2K, PackedQ2K, PackQ2K>},
    {gguf::Type::Q3_K, sizeof(PackedQ3K), PackAll<BlockQ3K, PackedQ3K, PackQ3K>},
    {gguf::Type::IQ4_XS, sizeof(PackedIQ4XS), PackAll<BlockIQ4XS, PackedIQ4XS, PackIQ4XS>},
    {gguf::Type::Q4_0, sizeof(PackedQ4_0),
     PackAll<BlockQ4_0, PackedQ4_0, PackQ4_0<BlockQ4_0, PackedQ4_0>>},
    {gguf::Type::IQ4_NL, sizeof(PackedQ4_0),
     PackAll<BlockIQ4NL, PackedQ4_0, PackQ4_0<BlockIQ4NL, PackedQ4_0>>},
    {gguf::Type::MXFP4, sizeof(PackedMXFP4),
     PackAll<BlockMXFP4, PackedMXFP4, PackQ4_0<BlockMXFP4, PackedMXFP4>>},
    {gguf::Type::Q4_1, sizeof(PackedQ4_1),
     PackAll<BlockQ4_1, PackedQ4_1, PackLegacy<BlockQ4_1, PackedQ4_1>>},
    {gguf::Type::Q5_0, sizeof(PackedQ5_0),
     PackAll<BlockQ5_0, PackedQ5_0, PackLegacy<BlockQ5_0, PackedQ5_0>>},
    {gguf::Type::Q5_1, sizeof(PackedQ5_1),
     PackAll<BlockQ5_1, PackedQ5_1, PackLegacy<BlockQ5_1, PackedQ5_1>>},
    {gguf::Type::Q8_0, sizeof(PackedQ8_0), PackAll<BlockQ8_0, PackedQ8_0, PackQ8_0>},
};

const Layout* LayoutOf(gguf::Type type) {
  for (const Layout& l : kLayouts) {
    if (l.type == type) return &l;
  }
  return nullptr;
}

}  // namespace

bool HasPackedLayout(gguf::Type type) { return LayoutOf(type) != nullptr; }

size_t PackedBytes(gguf::Type type, int64_t cols, int64_t rows) {
  const Layout* l = LayoutOf(type);
  if (l == nullptr || cols <= 0 || rows <= 0 || cols % kQK_K != 0) return 0;
  const size_t groups = static_cast<size_t>((rows + kPackRows - 1) / kPackRows);
  return groups * static_cast<size_t>(cols / kQK_K) * l->record;
}

void PackGroups(gguf::Type type, const uint8_t* src, size_t row_bytes, int64_t cols, int64_t rows,
                int64_t g0, int64_t g1, uint8_t* dst) {
  if (const Layout* l = LayoutOf(type)) l->pack(src, row_bytes, cols, rows, g0, g1, dst);
}

}  // namespace qwenrt

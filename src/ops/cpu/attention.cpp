// CPU causal attention as a tiled kernel with online softmax (the blocking and the per-row
// arithmetic are stated in attention.h).
//
// A work item is up to kAttentionTileRows query rows: a block of tokens x the query heads of one
// KV head. For each key chunk the item widens the chunk's K and V rows once (f16 / q8_0; f32 is
// read in place) and runs them against all its rows in register tiles: scores by RR rows x KK
// keys of vector accumulators over the head dimension, then p x V by RR rows x DV vectors of the
// head dimension, merged straight into each row's span state. Memory per thread is one tile,
// whatever the context (no score row over the whole context).
//
// Prefill: threads over (token block, KV head) items, each walking its spans in order.
// Decode and short appends (few items): threads over (item, span), each span's state kept in the
// shared partials, then merged per row in span order. The merge is the same function both ways
// and the span boundaries are absolute key positions, so the split changes no bit.
#include "ops/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/cpu/simd_f32.h"
#include "ops/cpu_namespace.h"

namespace QWENRT_CPU_NAMESPACE {
namespace {

using namespace simd;

constexpr int64_t kChunk = kAttentionKeyChunk;
constexpr int64_t kSpan = kAttentionKeySpan;
constexpr int64_t kRows = kAttentionTileRows;
static_assert(kSpan % kChunk == 0, "a span is whole chunks");
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Register tiles: AVX2 has 16 vector registers, AVX-512 and NEON 32.
constexpr int kTileRows = 4;
constexpr int kQkKeys = kLanes == 8 ? 2 : 4;
constexpr int kPvVecs = kLanes == 8 ? 2 : 4;

// scores[r * kChunk + j] = (q_r . k_j) * scale for RR rows x KK keys. Each (row, key) has its own
// accumulator, so the result does not depend on RR or KK.
template <int RR, int KK>
void QkTile(const float* const* q, const float* const* k, int64_t Dh, float scale, float* scores) {
  VecF acc[RR][KK];
  for (int r = 0; r < RR; ++r) {
    for (int j = 0; j < KK; ++j) acc[r][j] = Zero();
  }
  const int64_t dv = Dh / kLanes * kLanes;
  for (int64_t d = 0; d < dv; d += kLanes) {
    VecF kv[KK];
    for (int j = 0; j < KK; ++j) kv[j] = Load(k[j] + d);
    for (int r = 0; r < RR; ++r) {
      const VecF qv = Load(q[r] + d);
      for (int j = 0; j < KK; ++j) acc[r][j] = Fma(qv, kv[j], acc[r][j]);
    }
  }
  for (int r = 0; r < RR; ++r) {
    for (int j = 0; j < KK; ++j) {
      float s = ReduceAdd(acc[r][j]);
      for (int64_t e = dv; e < Dh; ++e) s = std::fma(q[r][e], k[j][e], s);
      scores[r * kChunk + j] = s * scale;
    }
  }
}

template <int RR>
void QkRows(const float* const* q, const float* const* k, int64_t nk, int64_t Dh, float scale,
            float* scores) {
  int64_t j = 0;
  for (; j + kQkKeys <= nk; j += kQkKeys) QkTile<RR, kQkKeys>(q, k + j, Dh, scale, scores + j);
  for (; j < nk; ++j) QkTile<RR, 1>(q, k + j, Dh, scale, scores + j);
}

// The scores of n rows (q: [n] row pointers) x nk keys; scores: [n, kChunk].
void Qk(const float* const* q, int64_t n, const float* const* k, int64_t nk, int64_t Dh,
        float scale, float* scores) {
  int64_t r = 0;
  for (; r + kTileRows <= n; r += kTileRows)
    QkRows<kTileRows>(q + r, k, nk, Dh, scale, scores + r * kChunk);
  switch (n - r) {
    case 3:
      QkRows<3>(q + r, k, nk, Dh, scale, scores + r * kChunk);
      break;
    case 2:
      QkRows<2>(q + r, k, nk, Dh, scale, scores + r * kChunk);
      break;
    case 1:
      QkRows<1>(q + r, k, nk, Dh, scale, scores + r * kChunk);
      break;
    default:
      break;
  }
}

// s[0, n) <- exp(s - m) with m = max s (n >= 1); *m_out = m, *l_out = the sum of the exps.
void ChunkSoftmax(float* s, int64_t n, float* m_out, float* l_out) {
  float m = kNegInf;
  for (int64_t j = 0; j < n; ++j) m = std::max(m, s[j]);  // order-free: max is exact
  const VecF vm = Set1(m);
  VecF acc = Zero();
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    const VecF e = Exp(Sub(Load(s + j), vm));
    Store(s + j, e);
    acc = Add(acc, e);
  }
  float l = ReduceAdd(acc);
  for (; j < n; ++j) {
    s[j] = std::exp(s[j] - m);
    l += s[j];
  }
  *m_out = m;
  *l_out = l;
}

// For RR rows over the same n keys, elements [d, d + DV * kLanes) of the head:
// acc = sum_j p_r[j] v_j (one fma chain per element, j ascending), then A_r = fma(acc, b_r, A_r
// a_r).
template <int RR, int DV>
void PvTile(const float* const* p, const float* const* v, int64_t n, int64_t d, const float* a,
            const float* b, float* const* A) {
  VecF acc[RR][DV];
  for (int r = 0; r < RR; ++r) {
    for (int i = 0; i < DV; ++i) acc[r][i] = Zero();
  }
  for (int64_t j = 0; j < n; ++j) {
    VecF vv[DV];
    for (int i = 0; i < DV; ++i) vv[i] = Load(v[j] + d + i * kLanes);
    for (int r = 0; r < RR; ++r) {
      const VecF pr = Set1(p[r][j]);
      for (int i = 0; i < DV; ++i) acc[r][i] = Fma(pr, vv[i], acc[r][i]);
    }
  }
  for (int r = 0; r < RR; ++r) {
    const VecF va = Set1(a[r]), vb = Set1(b[r]);
    for (int i = 0; i < DV; ++i) {
      float* x = A[r] + d + i * kLanes;
      Store(x, Fma(acc[r][i], vb, Mul(Load(x), va)));
    }
  }
}

template <int RR>
void PvRows(const float* const* p, const float* const* v, int64_t n, int64_t Dh, const float* a,
            const float* b, float* const* A) {
  const int64_t dv = Dh / kLanes * kLanes;
  int64_t d = 0;
  for (; d + kPvVecs * kLanes <= dv; d += kPvVecs * kLanes)
    PvTile<RR, kPvVecs>(p, v, n, d, a, b, A);
  for (; d < dv; d += kLanes) PvTile<RR, 1>(p, v, n, d, a, b, A);
  for (; d < Dh; ++d) {  // the scalar tail: the same operations as one vector lane
    for (int r = 0; r < RR; ++r) {
      float acc = 0.0f;
      for (int64_t j = 0; j < n; ++j) acc = std::fma(p[r][j], v[j][d], acc);
      A[r][d] = std::fma(acc, b[r], A[r][d] * a[r]);
    }
  }
}

// PvRows for n rows that all see the same nk keys.
void Pv(const float* const* p, float* const* A, const float* a, const float* b, int64_t n,
        const float* const* v, int64_t nk, int64_t Dh) {
  int64_t r = 0;
  for (; r + kTileRows <= n; r += kTileRows)
    PvRows<kTileRows>(p + r, v, nk, Dh, a + r, b + r, A + r);
  switch (n - r) {
    case 3:
      PvRows<3>(p + r, v, nk, Dh, a + r, b + r, A + r);
      break;
    case 2:
      PvRows<2>(p + r, v, nk, Dh, a + r, b + r, A + r);
      break;
    case 1:
      PvRows<1>(p + r, v, nk, Dh, a + r, b + r, A + r);
      break;
    default:
      break;
  }
}

// A row's state: [M, L, A[0, Dh)].
void InitState(float* st, int64_t Dh) {
  st[0] = kNegInf;
  st[1] = 0.0f;
  std::fill(st + 2, st + 2 + Dh, 0.0f);
}

// tot <- merge(tot, sp), the formula of attention.h (the per-chunk merge in SpanPass is the same).
void MergeState(float* tot, const float* sp, int64_t Dh) {
  const float m = std::max(tot[0], sp[0]);
  const float a = std::exp(tot[0] - m), b = std::exp(sp[0] - m);
  tot[0] = m;
  tot[1] = std::fma(sp[1], b, tot[1] * a);
  float* x = tot + 2;
  const float* y = sp + 2;
  const VecF va = Set1(a), vb = Set1(b);
  int64_t d = 0;
  for (; d + kLanes <= Dh; d += kLanes) Store(x + d, Fma(Load(y + d), vb, Mul(Load(x + d), va)));
  for (; d < Dh; ++d) x[d] = std::fma(y[d], b, x[d] * a);
}

// out = A / L.
void Finish(const float* st, float* out, int64_t Dh) {
  const float inv = 1.0f / st[1];
  const VecF vi = Set1(inv);
  int64_t d = 0;
  for (; d + kLanes <= Dh; d += kLanes) Store(out + d, Mul(Load(st + 2 + d), vi));
  for (; d < Dh; ++d) out[d] = st[2 + d] * inv;
}

// Pointers to the Dh elements of KV head g of rows [c0, c0 + n): in place for f32, else widened
// into buf: [n, Dh].
void ChunkRows(const KvView& view, int64_t c0, int64_t n, int64_t g, int64_t Dh, float* buf,
               const float** rows) {
  for (int64_t j = 0; j < n; ++j) {
    const uint8_t* row = view.Row(c0 + j);
    if (view.type == KvType::kF32) {
      rows[j] = reinterpret_cast<const float*>(row) + g * Dh;
    } else {
      KvDecode(view.type, row, g * Dh, Dh, buf + j * Dh);
      rows[j] = buf + j * Dh;
    }
  }
}

struct Call {
  AttentionShape s;
  const float* q;
  KvView k, v;
  float* out;
  float* scratch;  // [threads, AttentionTileFloats(Dh)], then the split partials
  float scale;
  int64_t group;    // query heads per KV head
  int64_t nh;       // query heads per item
  int64_t parts;    // items per (token block, KV head): group / nh
  int64_t tq;       // tokens per item
  int64_t blocks;   // token blocks
  int64_t spans;    // key spans of the whole call
  float* partials;  // split: after the tiles
  int64_t g0;       // split: the first KV head of this pass
};

// The query rows of a work item: tokens [t0, t1) x query heads [h0, h0 + nh) of KV head g; row r
// is token t0 + r / nh, head h0 + r % nh.
struct Item {
  int64_t t0, t1, g, h0;
};

// The first row of `it` that sees key `key` (rows of later tokens see more keys).
int64_t FirstRow(const Call& c, const Item& it, int64_t key) {
  return (std::max(it.t0, key - c.s.n_past) - it.t0) * c.nh;
}

float* Tile(const Call& c, int thread) { return c.scratch + thread * AttentionTileFloats(c.s.Dh); }

// The state of span `sp` of every row of `it` that sees one of its keys -> st[r] (rows that see
// none are not touched).
void SpanPass(const Call& c, const Item& it, int64_t sp, float* tile, float* const* st) {
  const AttentionShape& sh = c.s;
  const int64_t Dh = sh.Dh, nh = c.nh, rows = (it.t1 - it.t0) * nh;
  float* kbuf = tile;
  float* vbuf = kbuf + kChunk * Dh;
  float* scores = vbuf + kChunk * Dh;
  const float* q[kRows];
  const float* p[kRows];
  float* A[kRows];
  float a[kRows], b[kRows];
  int64_t nr[kRows];
  const float *kp[kChunk], *vp[kChunk];
  for (int64_t r = 0; r < rows; ++r) q[r] = c.q + ((it.t0 + r / nh) * sh.H + it.h0 + r % nh) * Dh;
  const int64_t key0 = sp * kSpan, key1 = std::min(key0 + kSpan, sh.n_past + it.t1);
  for (int64_t r = FirstRow(c, it, key0); r < rows; ++r) InitState(st[r], Dh);
  for (int64_t c0 = key0; c0 < key1; c0 += kChunk) {
    const int64_t nk = std::min(kChunk, key1 - c0), r0 = FirstRow(c, it, c0);
    ChunkRows(c.k, c0, nk, it.g, Dh, kbuf, kp);
    ChunkRows(c.v, c0, nk, it.g, Dh, vbuf, vp);
    // Every row from r0 against every key of the chunk: a row's scores past its own position are
    // computed and never used.
    Qk(q + r0, rows - r0, kp, nk, Dh, c.scale, scores + r0 * kChunk);
    for (int64_t r = r0; r < rows; ++r) {
      nr[r] = std::min(nk, sh.n_past + it.t0 + r / nh - c0 + 1);
      float* sr = scores + r * kChunk;
      float m, l;
      ChunkSoftmax(sr, nr[r], &m, &l);
      float* s = st[r];
      const float m2 = std::max(s[0], m);
      a[r] = std::exp(s[0] - m2);
      b[r] = std::exp(m - m2);
      s[0] = m2;
      s[1] = std::fma(l, b[r], s[1] * a[r]);
      p[r] = sr;
      A[r] = s + 2;
    }
    for (int64_t r = r0; r < rows;) {  // runs of rows over the same keys (the heads of a token)
      int64_t e = r + 1;
      while (e < rows && nr[e] == nr[r]) ++e;
      Pv(p + r, A + r, a + r, b + r, e - r, vp, nr[r], Dh);
      r = e;
    }
  }
}

Item ItemOf(const Call& c, int64_t blk, int64_t g, int64_t part) {
  const int64_t t0 = blk * c.tq;
  return Item{t0, std::min(c.s.T, t0 + c.tq), g, g * c.group + part * c.nh};
}

// Prefill: one item, every span in order, merged in the tile, written to out.
void RunItem(const Call& c, const Item& it, int thread) {
  const int64_t Dh = c.s.Dh, stride = Dh + 2, rows = (it.t1 - it.t0) * c.nh;
  float* tile = Tile(c, thread);
  float* span = tile + 2 * kChunk * Dh + kRows * kChunk;
  float* tot = span + kRows * stride;
  float* st[kRows];
  for (int64_t r = 0; r < rows; ++r) {
    st[r] = span + r * stride;
    InitState(tot + r * stride, Dh);
  }
  const int64_t last = (c.s.n_past + it.t1 - 1) / kSpan;
  for (int64_t sp = 0; sp <= last; ++sp) {
    SpanPass(c, it, sp, tile, st);
    for (int64_t r = FirstRow(c, it, sp * kSpan); r < rows; ++r)
      MergeState(tot + r * stride, st[r], Dh);
  }
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t t = it.t0 + r / c.nh, h = it.h0 + r % c.nh;
    Finish(tot + r * stride, c.out + (t * c.s.H + h) * Dh, Dh);
  }
}

// Split: the partial of (token t, query head h, span sp) in a pass over the query heads
// [g0 * group, g0 * group + heads): [T, heads, spans, Dh + 2].
float* Partial(const Call& c, int64_t heads, int64_t t, int64_t h, int64_t sp) {
  return c.partials + ((t * heads + h - c.g0 * c.group) * c.spans + sp) * (c.s.Dh + 2);
}

// Split, first step: the state of span sp of one item's rows into the partials.
void RunSpan(const Call& c, int64_t heads, const Item& it, int64_t sp, int thread) {
  if (sp * kSpan >= c.s.n_past + it.t1) return;  // past the item's last key
  float* st[kRows];
  for (int64_t r = 0; r < (it.t1 - it.t0) * c.nh; ++r)
    st[r] = Partial(c, heads, it.t0 + r / c.nh, it.h0 + r % c.nh, sp);
  SpanPass(c, it, sp, Tile(c, thread), st);
}

// Split, second step: a row's span partials merged in span order, written to out.
void MergeRow(const Call& c, int64_t heads, int64_t t, int64_t h, int thread) {
  const int64_t Dh = c.s.Dh;
  float* tot = Tile(c, thread);
  InitState(tot, Dh);
  const int64_t last = (c.s.n_past + t) / kSpan;
  for (int64_t sp = 0; sp <= last; ++sp) MergeState(tot, Partial(c, heads, t, h, sp), Dh);
  Finish(tot, c.out + (t * c.s.H + h) * Dh, Dh);
}

}  // namespace

void Attention(const AttentionShape& s, const float* q, const KvView& k, const KvView& v,
               float* out, float* scratch, ThreadPool& pool) {
  if (s.T <= 0) return;
  Call c{};
  c.s = s;
  c.q = q;
  c.k = k;
  c.v = v;
  c.out = out;
  c.scratch = scratch;
  c.scale = 1.0f / std::sqrt(static_cast<float>(s.Dh));
  c.group = s.H / s.Hkv;
  c.nh = c.group <= kAttentionMaxGroup ? c.group : 1;
  c.parts = c.group / c.nh;
  c.tq = std::max<int64_t>(1, kRows / c.nh);
  c.blocks = (s.T + c.tq - 1) / c.tq;
  c.spans = (s.n_past + s.T + kSpan - 1) / kSpan;
  const int64_t items = c.blocks * s.Hkv * c.parts;
  const bool split = s.T <= kAttentionSplitTokens && c.spans > 1 && items < 2 * pool.size();
  if (!split) {
    // Largest items (the last tokens, which see the most keys) first.
    pool.ParallelForDynamic(items, 1, [a = &c](int64_t b, int64_t e, int thread) {
      for (int64_t i = b; i < e; ++i) {
        const int64_t per = a->s.Hkv * a->parts;
        const int64_t blk = a->blocks - 1 - i / per, g = i % per / a->parts, part = i % a->parts;
        RunItem(*a, ItemOf(*a, blk, g, part), thread);
      }
    });
    return;
  }
  // Split passes of hp KV heads: rows T * hp * group <= kAttentionSplitTokens * group, the
  // partials AttentionScratchFloats holds after the tiles.
  c.partials = scratch + pool.size() * AttentionTileFloats(s.Dh);
  const int64_t hp = std::max<int64_t>(1, std::min(s.Hkv, kAttentionSplitTokens / s.T));
  for (c.g0 = 0; c.g0 < s.Hkv; c.g0 += hp) {
    const int64_t n_kv = std::min(hp, s.Hkv - c.g0), heads = n_kv * c.group;
    pool.ParallelForDynamic(c.blocks * n_kv * c.parts * c.spans, 1,
                            [a = &c, heads](int64_t b, int64_t e, int thread) {
                              const Call& cc = *a;
                              const int64_t per = heads / cc.nh * cc.blocks;
                              for (int64_t i = b; i < e; ++i) {
                                // Spans outermost: the first spans (seen by every row) first.
                                const int64_t sp = i / per, rest = i % per;
                                const int64_t blk = rest / (heads / cc.nh),
                                              hi = rest % (heads / cc.nh);  // item head index
                                const int64_t g = cc.g0 + hi / cc.parts, part = hi % cc.parts;
                                RunSpan(cc, heads, ItemOf(cc, blk, g, part), sp, thread);
                              }
                            });
    pool.ParallelForDynamic(s.T * heads, 1, [a = &c, heads](int64_t b, int64_t e, int thread) {
      for (int64_t i = b; i < e; ++i)
        MergeRow(*a, heads, i / heads, a->g0 * a->group + i % heads, thread);
    });
  }
}

}  // namespace QWENRT_CPU_NAMESPACE

// CPU causal attention, blocked: a work item is up to kTokBlock query tokens x the query heads of
// one KV head (or a part of them when there are too few items to fill the pool, as in decode).
// Each cached K and V row is read (and widened from f16 / q8_0) once per item instead of once
// per query row, and the query rows of a token go through the dot products together (independent
// FMA chains instead of one latency-bound chain per row).
//
// Per query row the arithmetic is fixed, whatever the blocking (so results do not depend on the
// batch split, and a prefill equals the same tokens decoded one at a time):
//   s_j = DotRow(q, k_j) * scale                     (lane-wise FMAs in dimension order, fixed
//   reduction) p_j = exp(s_j - max_j s_j), sum in a fixed order  (simd::Exp on whole vectors,
//   std::exp on the tail) o   = sum_j (p_j / sum) v_j, j ascending         (one FMA per element per
//   key)
// This changes the summation order and exp against ref (rounding only). f32 rows are read in place;
// f16 / q8_0 rows are widened into a per-thread row first, so f16 storage of f16-representable
// values gives exactly the f32-storage result.
#include "ops/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/cpu/simd_f32.h"
#include "ops/cpu_namespace.h"

namespace QWENRT_CPU_NAMESPACE {
namespace {

using namespace simd;

// The dot products of R query rows with one key row; out[r] = q_r . k (scaled by the caller).
// Two accumulators per row over alternating vectors, then ReduceAdd, then the scalar tail: the
// same sequence for every R, so a row's score does not depend on the rows next to it.
template <int R>
void DotRows(const float* const* q, const float* k, int64_t Dh, float* out) {
  VecF a0[R], a1[R];
  for (int r = 0; r < R; ++r) a0[r] = a1[r] = Zero();
  int64_t d = 0;
  for (; d + 2 * kLanes <= Dh; d += 2 * kLanes) {
    const VecF k0 = Load(k + d), k1 = Load(k + d + kLanes);
    for (int r = 0; r < R; ++r) {
      a0[r] = Fma(Load(q[r] + d), k0, a0[r]);
      a1[r] = Fma(Load(q[r] + d + kLanes), k1, a1[r]);
    }
  }
  if (d + kLanes <= Dh) {
    const VecF k0 = Load(k + d);
    for (int r = 0; r < R; ++r) a0[r] = Fma(Load(q[r] + d), k0, a0[r]);
    d += kLanes;
  }
  for (int r = 0; r < R; ++r) {
    float s = ReduceAdd(Add(a0[r], a1[r]));
    for (int64_t e = d; e < Dh; ++e) s = std::fma(q[r][e], k[e], s);
    out[r] = s;
  }
}

// DotRows for any count of rows, four at a time.
void DotRowsN(const float* const* q, int64_t n, const float* k, int64_t Dh, float* out) {
  int64_t r = 0;
  for (; r + 4 <= n; r += 4) DotRows<4>(q + r, k, Dh, out + r);
  switch (n - r) {
    case 3:
      DotRows<3>(q + r, k, Dh, out + r);
      break;
    case 2:
      DotRows<2>(q + r, k, Dh, out + r);
      break;
    case 1:
      DotRows<1>(q + r, k, Dh, out + r);
      break;
    default:
      break;
  }
}

// s[0, n) = exp(s - max s); returns 1 / their sum.
float Softmax(float* s, int64_t n) {
  float mx = -std::numeric_limits<float>::infinity();
  for (int64_t j = 0; j < n; ++j) mx = std::max(mx, s[j]);  // order-free: max is exact
  const VecF vmx = Set1(mx);
  VecF acc = Zero();
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    const VecF e = Exp(Sub(Load(s + j), vmx));
    Store(s + j, e);
    acc = Add(acc, e);
  }
  float sum = ReduceAdd(acc);
  for (; j < n; ++j) {
    s[j] = std::exp(s[j] - mx);
    sum += s[j];
  }
  return 1.0f / sum;
}

// o[0, Dh) += w * v[0, Dh), one FMA per element.
void Axpy(float w, const float* v, float* o, int64_t Dh) {
  const VecF vw = Set1(w);
  int64_t d = 0;
  for (; d + kLanes <= Dh; d += kLanes) Store(o + d, Fma(vw, Load(v + d), Load(o + d)));
  for (; d < Dh; ++d) o[d] = std::fma(w, v[d], o[d]);
}

// The Dh elements of KV head g of a stored row: in place for f32, else widened into `scratch`.
const float* HeadRow(const KvView& view, int64_t j, int64_t g, int64_t Dh, float* scratch) {
  const uint8_t* row = view.Row(j);
  if (view.type == KvType::kF32) return reinterpret_cast<const float*>(row) + g * Dh;
  KvDecode(view.type, row, g * Dh, Dh, scratch);
  return scratch;
}

struct Args {
  AttentionShape s;
  const float* q;
  KvView k, v;
  float *out, *scores, *rows;
  int64_t n_max, group, head_parts;
  float scale;
};

// Query tokens [t0, t1) x query heads [h0, h1) of KV head g. scores: [kTokBlock * group, n_max +
// 2].
void RunItem(const Args& a, int64_t t0, int64_t t1, int64_t g, int64_t h0, int64_t h1,
             float* scores, float* krow, float* vrow) {
  const AttentionShape& sh = a.s;
  const int64_t Dh = sh.Dh, nh = h1 - h0, stride = a.n_max + 2;
  const int64_t keys_end = sh.n_past + t1;  // the last token's keys; token t sees n_past + t + 1
  const float* q[kAttentionTokBlock * kAttentionMaxGroup];
  float dots[kAttentionMaxGroup];
  for (int64_t t = t0; t < t1; ++t) {
    for (int64_t h = h0; h < h1; ++h) q[(t - t0) * nh + (h - h0)] = a.q + (t * sh.H + h) * Dh;
  }
  for (int64_t j = 0; j < keys_end; ++j) {
    const float* kj = HeadRow(a.k, j, g, Dh, krow);
    for (int64_t t = std::max(t0, j - sh.n_past); t < t1; ++t) {  // the tokens that see key j
      const int64_t r0 = (t - t0) * nh;
      DotRowsN(q + r0, nh, kj, Dh, dots);
      for (int64_t r = 0; r < nh; ++r) scores[(r0 + r) * stride + j] = dots[r] * a.scale;
    }
  }
  for (int64_t t = t0; t < t1; ++t) {
    for (int64_t r = (t - t0) * nh; r < (t - t0 + 1) * nh; ++r) {
      float* s = scores + r * stride;
      s[a.n_max] = Softmax(s, sh.n_past + t + 1);  // the row's 1 / sum, after its scores
    }
    std::fill(a.out + (t * sh.H + h0) * Dh, a.out + (t * sh.H + h1) * Dh, 0.0f);
  }
  for (int64_t j = 0; j < keys_end; ++j) {
    const float* vj = HeadRow(a.v, j, g, Dh, vrow);
    for (int64_t t = std::max(t0, j - sh.n_past); t < t1; ++t) {
      for (int64_t h = h0; h < h1; ++h) {
        const float* s = scores + ((t - t0) * nh + (h - h0)) * stride;
        Axpy(s[j] * s[a.n_max], vj, a.out + (t * sh.H + h) * Dh, Dh);
      }
    }
  }
}

}  // namespace

void Attention(const AttentionShape& s, const float* q, const KvView& k, const KvView& v,
               float* out, float* scores, float* rows, ThreadPool& pool) {
  if (s.T <= 0) return;
  const int64_t group = s.H / s.Hkv;
  const int64_t blocks = (s.T + kAttentionTokBlock - 1) / kAttentionTokBlock;
  // Too few (token block, KV head) items to give every thread one (decode on a many-core pool):
  // split the heads of a group too; each row's arithmetic is the same either way, only the K/V
  // reads (and their widening from f16) repeat, once per part.
  const int64_t head_parts =
      blocks * s.Hkv >= pool.size() && group <= kAttentionMaxGroup ? 1 : group;
  // Everything the workers need behind one pointer: keeps the std::function allocation-free.
  const Args args{s,
                  q,
                  k,
                  v,
                  out,
                  scores,
                  rows,
                  s.n_past + s.T,
                  group,
                  head_parts,
                  1.0f / std::sqrt(static_cast<float>(s.Dh))};
  pool.ParallelForDynamic(
      blocks * s.Hkv * head_parts, 1, [a = &args](int64_t b, int64_t e, int thread) {
        const AttentionShape& sh = a->s;
        float* sc = a->scores + thread * AttentionScoreFloats(a->n_max, a->group);
        float* krow =
            a->rows == nullptr ? nullptr : a->rows + thread * 2 * sh.Dh;  // widened K, then V
        float* vrow = krow == nullptr ? nullptr : krow + sh.Dh;
        for (int64_t i = b; i < e; ++i) {
          const int64_t part = i % a->head_parts, g = (i / a->head_parts) % sh.Hkv,
                        blk = i / a->head_parts / sh.Hkv;
          const int64_t t0 = blk * kAttentionTokBlock, t1 = std::min(sh.T, t0 + kAttentionTokBlock);
          const int64_t per = a->group / a->head_parts, h0 = g * a->group + part * per;
          RunItem(*a, t0, t1, g, h0, h0 + per, sc, krow, vrow);
        }
      });
}

}  // namespace QWENRT_CPU_NAMESPACE

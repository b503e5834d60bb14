// The forward pass's scratch activations for one ubatch of up to Tm tokens (cf. gemma.cpp
// activations.h): the buffers and their sizes, declared once for every backend. The host backends
// (kRef, kCpu: forward.h) hold them as std::vector, the CUDA pass (forward_cuda.cpp) as device
// arrays; both allocate, and count, through ForEachActivation, so a buffer added here is sized
// everywhere.
#pragma once

#include <algorithm>
#include <cstdint>

#include "model/config.h"

namespace qwenrt {

// Floats: a buffer of f32 values; Ints: a buffer of int32 values (a backend that keeps the MoE
// grouping elsewhere may give it a type its allocation skips).
template <typename Floats, typename Ints>
struct ActivationSet {
  Floats x;    // [Tm, E] residual stream
  Floats xn;   // [Tm, E] normed input of the current sub-block
  Floats mix;  // [Tm, E] sub-block output
  // Gated delta net.
  Floats qkv;    // [Tm, C] projections before the conv (the conv state's inputs)
  Floats conv;   // [Tm, C] after conv + SiLU
  Floats z;      // [Tm, Hv*Dv] output gate
  Floats alpha;  // [Tm, Hv] decay input, then g (log-decay)
  Floats beta;   // [Tm, Hv] write strength input, then sigmoid'ed
  Floats gq;     // [Tm, Hk, Dk]
  Floats gk;     // [Tm, Hk, Dk]
  Floats gv;     // [Tm, Hv, Dv]
  Floats go;     // [Tm, Hv, Dv] delta-rule output, then gated-normed
  // Full attention.
  Floats qg;   // [Tm, H, 2, Dh] joint query + gate projection
  Floats q;    // [Tm, H, Dh] normed query rows of qg (the gate is read in place)
  Floats k;    // [Tm, Hkv, Dh]
  Floats v;    // [Tm, Hkv, Dh]
  Floats att;  // [Tm, H, Dh]
  // FFN (dense: F wide; MoE: reused for routed experts (Fe) and the shared expert (Fs)).
  Floats ff_gate;  // [Tm, max(F, Fe, Fs)]
  Floats ff_up;    // [Tm, max(F, Fe, Fs)]
  // MoE.
  Floats router;      // [Tm, X] logits, then probabilities
  Ints ids;           // [Tm, k] selected experts per token, in selection order
  Floats weights;     // [Tm, k] their normalised weights
  Ints slots;         // [Tm * k] (token, slot) pairs t*k+j grouped by expert
  Ints expert_begin;  // [X + 1] offsets into `slots`
  Floats xe;          // [Tm, E] gathered inputs of one expert
  Floats ye;          // [Tm, E] that expert's outputs
  Floats yslot;       // [Tm, k, E] routed outputs per (token, slot), summed in slot order
  Floats shgate;      // [Tm] shared-expert gate logit
  // MTP draft head (model/mtp.h).
  Floats eh;  // [Tm, 2E] [enorm(embedding) ; hnorm(hidden)], the fusion projection's input
};

// The one list: calls fn(buffer, elements) for every buffer of `a` that `c`'s layers use, sized for
// ubatches of Tm tokens (buffers of layer kinds the model lacks are not visited).
template <typename Set, typename Fn>
void ForEachActivation(Set& a, const ModelConfig& c, int64_t Tm, Fn&& fn) {
  const int64_t E = c.n_embd, C = c.conv_channels(), Cq = c.ssm_hk * c.ssm_dk,
                Cv = c.ssm_hv * c.ssm_dv, Hv = c.ssm_hv, HD = c.n_head * c.head_dim,
                KvD = c.n_head_kv * c.head_dim, X = c.n_expert, K = c.n_expert_used;
  const int64_t ff = std::max({c.n_ff, c.n_ff_exp, c.n_ff_shexp});
  fn(a.x, Tm * E);
  fn(a.xn, Tm * E);
  fn(a.mix, Tm * E);
  if (c.n_gdn_layers() > 0) {
    fn(a.qkv, Tm * C);
    fn(a.conv, Tm * C);
    fn(a.z, Tm * Cv);
    fn(a.alpha, Tm * Hv);
    fn(a.beta, Tm * Hv);
    fn(a.gq, Tm * Cq);
    fn(a.gk, Tm * Cq);
    fn(a.gv, Tm * Cv);
    fn(a.go, Tm * Cv);
  }
  if (c.n_attn_layers() > 0) {
    fn(a.qg, Tm * 2 * HD);
    fn(a.q, Tm * HD);
    fn(a.k, Tm * KvD);
    fn(a.v, Tm * KvD);
    fn(a.att, Tm * HD);
  }
  fn(a.ff_gate, Tm * ff);
  fn(a.ff_up, Tm * ff);
  if (c.moe) {
    fn(a.router, Tm * X);
    fn(a.ids, Tm * K);
    fn(a.weights, Tm * K);
    fn(a.slots, Tm * K);
    fn(a.expert_begin, X + 1);
    fn(a.xe, Tm * E);
    fn(a.ye, Tm * E);
    fn(a.yslot, Tm * K * E);
    fn(a.shgate, Tm);
  }
  if (c.n_nextn > 0) fn(a.eh, Tm * 2 * E);
}

}  // namespace qwenrt

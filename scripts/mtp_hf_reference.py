#!/usr/bin/env python3
"""The MTP head of a Hugging Face model made by ../shared/tools/hf/hf_models.py --mtp, computed with
transformers' own Qwen3.5 decoder layer class (docs/mtp.md, "Checked against transformers").

  python scripts/mtp_hf_reference.py MODEL_DIR tokens.txt out.f32   # [N-1, V] f32 logits
"""
# transformers' reference of the MTP block (vLLM qwen3_5_mtp semantics): the decoder layer class
# of a full-attention layer loaded with mtp.layers.0.*, fc over [enorm(embed(x_{i+1})); hnorm(h_i)].
import sys, numpy as np, torch, transformers
from safetensors.torch import load_file
from transformers.models.qwen3_5 import modeling_qwen3_5 as mq
from transformers.models.qwen3_5_moe import modeling_qwen3_5_moe as mqm
from transformers.masking_utils import create_causal_mask
d, toks, out = sys.argv[1], sys.argv[2], sys.argv[3]
model = transformers.AutoModelForCausalLM.from_pretrained(d, dtype=torch.float32).eval()
cfg = model.config
st = load_file(d + "/model.safetensors")
ids = torch.tensor([[int(x) for x in open(toks).read().split()]])
T = ids.shape[1] - 1
full = next(i for i, t in enumerate(cfg.layer_types) if t == "full_attention")
moe = getattr(cfg, "num_experts", 0) > 0
mod = mqm if moe else mq
layer = (mqm.Qwen3_5MoeDecoderLayer if moe else mq.Qwen3_5DecoderLayer)(cfg, full).float().eval()
sd = {k[len("mtp.layers.0."):]: v for k, v in st.items() if k.startswith("mtp.layers.0.")}
if moe:  # the checkpoint's per-expert tensors -> the class's fused expert parameters
    X = cfg.num_experts
    sd["mlp.experts.gate_up_proj"] = torch.stack([torch.cat(
        [sd.pop(f"mlp.experts.{e}.gate_proj.weight"), sd.pop(f"mlp.experts.{e}.up_proj.weight")])
        for e in range(X)])
    sd["mlp.experts.down_proj"] = torch.stack([sd.pop(f"mlp.experts.{e}.down_proj.weight")
                                               for e in range(X)])
layer.load_state_dict(sd)
E = cfg.hidden_size
norms = {}
for n in ["pre_fc_norm_embedding", "pre_fc_norm_hidden", "norm"]:
    m = (mqm.Qwen3_5MoeRMSNorm if moe else mq.Qwen3_5RMSNorm)(E, cfg.rms_norm_eps); m.weight.data = st[f"mtp.{n}.weight"]; norms[n] = m
fc = torch.nn.Linear(2 * E, E, bias=False); fc.weight.data = st["mtp.fc.weight"]
with torch.no_grad():
    inner = model.model
    h = inner(ids).last_hidden_state                        # post-norm: what lm_head reads
    e = inner.embed_tokens(ids[:, 1:])
    x = fc(torch.cat([norms["pre_fc_norm_embedding"](e), norms["pre_fc_norm_hidden"](h[:, :-1])], -1))
    pos = torch.arange(T).view(1, 1, -1).expand(4, 1, -1)
    mask = create_causal_mask(config=cfg, inputs_embeds=x, attention_mask=None, cache=None,
                              position_ids=pos[0])
    pe = inner.rotary_emb(x, pos[1:])
    x = layer(x, position_embeddings=pe, attention_mask=mask, position_ids=pos[0])
    if isinstance(x, tuple): x = x[0]
    logits = model.lm_head(norms["norm"](x))[0]
logits.numpy().astype(np.float32).tofile(out)
print("rows", T, "vocab", logits.shape[-1])

"""The demo model: transformers' own Qwen3.5 text model (Qwen3_5ForCausalLM) plus one MTP layer.

MTP semantics (those of the released Qwen3.5 MTP weights, as vLLM's qwen3_5_mtp.py and llama.cpp's
qwen35 MTP graph run them): at position i, with h_i the trunk's last hidden state AFTER the final
norm (model.norm) and x_{i+1} the next token,
    u_i = fc([pre_fc_norm_embedding(embed(x_{i+1})) ; pre_fc_norm_hidden(h_i)])     (fc: 2E -> E)
    u   = one full-attention Qwen3.5 decoder layer over u_0..u_i at position i (causal)
    logits_i = lm_head(norm(u_i))     predicts x_{i+2}
embed and lm_head are the trunk's (tied). Norms are Qwen3.5 RMSNorms (weight stored zero-centred,
applied as 1 + w; the converter adds the 1). HF names: mtp.fc, mtp.pre_fc_norm_embedding,
mtp.pre_fc_norm_hidden, mtp.layers.0.*, mtp.norm.
"""
import torch
import torch.nn as nn


def text_config(vocab_size, hidden, layers, ff, eos_id, pad_id):
    """A real Qwen3.5 text_config's structure at small widths (see shared/tools/hf/hf_models.py)."""
    text = dict(
        initializer_range=0.02, vocab_size=vocab_size, hidden_size=hidden, num_hidden_layers=layers,
        num_attention_heads=4, num_key_value_heads=2, hidden_act="silu",
        max_position_embeddings=262144, rms_norm_eps=1e-6, use_cache=True, attention_bias=False,
        attention_dropout=0.0, head_dim=64, linear_conv_kernel_dim=4, linear_key_head_dim=64,
        linear_value_head_dim=64, linear_num_key_heads=2, linear_num_value_heads=4,
        layer_types=["linear_attention" if (i + 1) % 4 else "full_attention" for i in range(layers)],
        # partial rotary 0.25 of head_dim 64 = 16 dims, interleaved M-RoPE sections scaled from
        # the real [11, 11, 10] (of 32) to 8 pairs
        rope_parameters={"rope_type": "default", "rope_theta": 10000000.0,
                         "partial_rotary_factor": 0.25, "mrope_section": [3, 3, 2],
                         "mrope_interleaved": True},
        intermediate_size=ff, tie_word_embeddings=True,
        eos_token_id=eos_id, pad_token_id=pad_id, bos_token_id=None,
    )
    extra = dict(full_attention_interval=4, attn_output_gate=True, mtp_num_hidden_layers=1,
                 mtp_use_dedicated_embeddings=False, mamba_ssm_dtype="float32", mlp_only_layers=[])
    return text, extra


class MTP(nn.Module):
    def __init__(self, config):
        super().__init__()
        from transformers.models.qwen3_5.modeling_qwen3_5 import (Qwen3_5DecoderLayer,
                                                                  Qwen3_5RMSNorm)
        E = config.hidden_size
        full = config.layer_types.index("full_attention")  # any full-attention layer index
        self.fc = nn.Linear(2 * E, E, bias=False)
        self.pre_fc_norm_embedding = Qwen3_5RMSNorm(E, eps=config.rms_norm_eps)
        self.pre_fc_norm_hidden = Qwen3_5RMSNorm(E, eps=config.rms_norm_eps)
        self.layers = nn.ModuleList([Qwen3_5DecoderLayer(config, full)])
        self.norm = Qwen3_5RMSNorm(E, eps=config.rms_norm_eps)

    def forward(self, trunk, h, next_ids):
        """h [B, T, E]: trunk hidden after the final norm at positions 0..T-1; next_ids [B, T]:
        x_{i+1}. Returns MTP logits [B, T, V] (row i predicts x_{i+2})."""
        e = trunk.model.embed_tokens(next_ids)
        u = self.fc(torch.cat([self.pre_fc_norm_embedding(e), self.pre_fc_norm_hidden(h)], -1))
        B, T, _ = u.shape
        pos = torch.arange(T, device=u.device)[None].expand(B, T)
        pe = trunk.model.rotary_emb(u, pos)
        for layer in self.layers:
            # attention_mask None: the layer's SDPA attention is causal (is_causal=True)
            u = layer(u, position_embeddings=pe, attention_mask=None, position_ids=pos)
        return trunk.lm_head(self.norm(u))


def init_mtp_from_trunk(mtp, trunk):
    """Start the MTP decoder layer from the trunk's last full-attention layer (a faster start)."""
    src = trunk.model.layers[trunk.config.layer_types.index("full_attention")]
    mtp.layers[0].load_state_dict(src.state_dict())
    with torch.no_grad():
        E = mtp.fc.weight.shape[0]
        mtp.fc.weight.zero_()
        mtp.fc.weight[:, :E] += 0.5 * torch.eye(E)
        mtp.fc.weight[:, E:] += 0.5 * torch.eye(E)

#!/usr/bin/env python3
"""Writes tests/data/rope/yarn_transformers.txt: transformers' own YaRN rotary tables (cos, sin per
rotated pair, attention scaling applied) for a few rope configurations and positions, the reference
that tests/rope_yarn_test.cpp holds ref::Rope and cpu::Rope against.

  pip install torch "transformers>=5"
  python scripts/gen_yarn_reference.py > tests/data/rope/yarn_transformers.txt

The tables come from transformers.modeling_rope_utils.ROPE_INIT_FUNCTIONS["yarn"] on a
Qwen3_5TextConfig (so partial_rotary_factor and the rope_parameters layout are the model's), with
cos = cos(pos * inv_freq) * attention_scaling, sin likewise, in float32 as the model computes them.
"""
import sys

import torch
import transformers
from transformers import Qwen3_5TextConfig
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

# name, head_dim, partial_rotary_factor, rope_theta, factor, original ctx, max positions, extra
CASES = [
    # the Qwen3.5 model cards' long-context setting: factor 4 over 262,144
    ("qwen35", 256, 0.25, 1.0e7, 4.0, 262144, 1048576, {}),
    # a short training context, so the ramp sits in the middle of the pairs
    ("short", 32, 0.5, 10000.0, 8.0, 128, 1024, {}),
    # betas and an attention factor given by the config
    ("betas", 64, 0.5, 10000.0, 2.0, 512, 1024,
     {"beta_fast": 16.0, "beta_slow": 2.0, "attention_factor": 1.2}),
]
POSITIONS = [0, 1, 2, 3, 7, 31, 100, 127, 128, 129, 500, 1000, 2047, 4095, 8191]


def main():
    out = sys.stdout
    out.write(f"# transformers {transformers.__version__}, torch {torch.__version__}; "
              "scripts/gen_yarn_reference.py\n")
    out.write("# case NAME R BASE FACTOR ORIG_CTX BETA_FAST BETA_SLOW ATTN_FACTOR(0 = default)\n")
    out.write("# POS then cos_0 sin_0 cos_1 sin_1 ... for the R/2 pairs\n")
    for name, head_dim, prf, theta, factor, orig, max_pos, extra in CASES:
        rope = {"rope_type": "yarn", "factor": factor, "original_max_position_embeddings": orig,
                "rope_theta": theta, "partial_rotary_factor": prf}
        rope.update(extra)
        cfg = Qwen3_5TextConfig(head_dim=head_dim, max_position_embeddings=max_pos,
                                rope_parameters=rope, partial_rotary_factor=prf)
        inv_freq, scaling = ROPE_INIT_FUNCTIONS["yarn"](cfg, "cpu")
        R = 2 * inv_freq.numel()
        assert R == int(head_dim * prf), (R, head_dim, prf)
        out.write(f"case {name} {R} {theta!r} {factor!r} {orig} {extra.get('beta_fast', 32.0)!r} "
                  f"{extra.get('beta_slow', 1.0)!r} {extra.get('attention_factor', 0.0)!r}\n")
        for pos in POSITIONS:
            ang = torch.tensor([float(pos)], dtype=torch.float32)[:, None] * inv_freq.float()[None, :]
            c = (ang.cos() * scaling)[0].tolist()
            s = (ang.sin() * scaling)[0].tolist()
            vals = " ".join(f"{a:.9g} {b:.9g}" for a, b in zip(c, s))
            out.write(f"{pos} {vals}\n")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Writes tests/data/iq/<TYPE>.blocks (random blocks, raw GGUF bytes) and <TYPE>.f32 (their values as
decoded by gguf-py's reference dequantizer, little-endian float32) for the grid i-quants. The block
bytes are random except the fp16 super-scale, which is a finite value (normal, negative, subnormal and
zero ones included) so that the expected values are finite.

    python3 scripts/gen_iq_vectors.py tests/data/iq
"""
import os
import sys

import numpy as np
from gguf import quants as q
from gguf.constants import GGMLQuantizationType as T

TYPES = ["IQ1_S", "IQ1_M", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S"]
N_BLOCKS = 12


def scales_d(rng, nb):
    d = (rng.standard_normal(nb) * 0.02).astype(np.float16)
    d[1] = np.float16(-0.5)
    d[2] = np.float16(6e-6)  # subnormal
    d[3] = np.float16(0.0)
    d[4] = np.float16(3.0)
    return d.view(np.uint16)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(20261201)
    for name in TYPES:
        qt = T[name]
        cls = q._type_traits[qt]
        size = cls.type_size
        blocks = rng.integers(0, 256, size=(N_BLOCKS, size), dtype=np.uint8)
        d = scales_d(rng, N_BLOCKS)
        if name == "IQ1_M":
            # d's four nibbles are the top nibbles of the four u16 scale words (bytes 48..55).
            for b in range(N_BLOCKS):
                for i in range(4):
                    nib = (int(d[b]) >> (4 * i)) & 0xF
                    hi = 48 + 2 * i + 1
                    blocks[b, hi] = (blocks[b, hi] & 0x0F) | (nib << 4)
        else:
            blocks[:, 0] = d & 0xFF
            blocks[:, 1] = d >> 8
        values = q.dequantize(blocks.reshape(-1), qt).astype(np.float32).reshape(-1)
        assert values.size == N_BLOCKS * 256 and np.all(np.isfinite(values))
        blocks.tofile(os.path.join(out, f"{name}.blocks"))
        values.astype("<f4").tofile(os.path.join(out, f"{name}.f32"))
        print(name, blocks.size, "bytes ->", values.size, "values")


if __name__ == "__main__":
    main()

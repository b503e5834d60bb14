#!/usr/bin/env python3
"""Reference values of the quantized fixture models (tests/data/quant/*.gguf) from gguf-py's own
dequantizers (`pip install gguf`; gguf.quants.dequantize), the format truth the C++ reference
dequantizer (src/ops/ref/dequantize.cpp) must match bit for bit.

Writes tests/data/quant/dequant-refs.txt, one line per tensor that is not F32, of every file:
  FILE TENSOR TYPE N HASH FIRST0 .. FIRST7
  TYPE     ggml type name; N the element count
  HASH     hex of sum_i bits_i * (2i + 1) mod 2^64, bits_i = the float32 bit pattern of element i
           (odd multipliers: any single changed element changes the hash)
  FIRST*   the float32 bit patterns (hex) of the first 8 elements, for a readable failure
Split parts (*-0000k-of-0000N.gguf) are skipped: they hold the same tensors as their unsplit file.

usage: scripts/quant_fixture_refs.py tests/data/quant
"""
import os
import re
import sys

import numpy as np
from gguf import GGUFReader
from gguf.quants import dequantize


def tensor_hash(values: np.ndarray) -> str:
    bits = values.astype(np.float32).reshape(-1).view(np.uint32).astype(np.uint64)
    mult = np.arange(bits.size, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    with np.errstate(over="ignore"):
        h = int(np.sum(bits * mult, dtype=np.uint64))
    return f"{h:016x}"


def main() -> None:
    folder = sys.argv[1]
    lines = []
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".gguf") or re.search(r"-\d{5}-of-\d{5}\.gguf$", name):
            continue
        reader = GGUFReader(os.path.join(folder, name))
        for t in reader.tensors:
            if t.tensor_type.name == "F32":
                continue
            values = dequantize(t.data, t.tensor_type)
            flat = values.astype(np.float32).reshape(-1)
            first = " ".join(f"{int(b):08x}" for b in flat[:8].view(np.uint32))
            lines.append(f"{name} {t.name} {t.tensor_type.name} {flat.size} {tensor_hash(flat)} {first}\n")
    path = os.path.join(folder, "dequant-refs.txt")
    with open(path, "w") as f:
        f.writelines(lines)
    print(f"wrote {path}: {len(lines)} tensors")


if __name__ == "__main__":
    main()

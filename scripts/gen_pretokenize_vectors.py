#!/usr/bin/env python3
"""Random strings split by the reference `qwen35` regex (Python `regex` module), as test vectors
for the hand-written pre-tokenizer (tests/tokenizer_test.cpp reads the output).

  python3 scripts/gen_pretokenize_vectors.py 1000 1 > tests/data/tokenizer/pretokenize-regex.json
"""
import json
import random
import sys

import regex

PATTERN = regex.compile(
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""")
# Characters of every class the scanner distinguishes, weighted towards the tricky ones.
# (U+017F is left out: the regex's case folding matches it as 's', llama.cpp's lower-casing not.)
POOL = (list(" \t\n\r'''sStTrReEvVlLmMdDa1!.(\"-") +
        ["\u00bd", "\u00e9", "\u0301", "\u0300", "\u00a0", "\u3000", "\u2000", "\u200b", "\u001c",
         "\u4e2d", "\U0001F600", "\u0085", "\u01c5", "\u16ee", "\u0903", "\u20dd", "\u0378",
         "\u2028", "\u000b", "\u0660", "\u0e01", "\u0e31", "\U0002EBF0", "\u1ACF"])


def main():
    n, seed = int(sys.argv[1]), int(sys.argv[2])
    rng = random.Random(seed)
    cases = []
    for _ in range(n):
        text = "".join(rng.choice(POOL) for _ in range(rng.randint(1, 12)))
        cases.append({"text": text, "pieces": PATTERN.findall(text)})
    json.dump(cases, sys.stdout, ensure_ascii=False, indent=0)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The GGUF through qwenrt against transformers: logits and perplexity of held-out text.

  python tools/demo-model/check_qwenrt.py --gguf build/demo.gguf [--work build/demo-model]
      [--cli build/examples/cli/qwenrt-cli]

Runs `qwenrt-cli eval` (backends ref and cpu) on work/heldout.tokens.txt (held-out conversations,
written by make.py's eval stage with transformers' logits in work/heldout.hf.f32) and prints the
max |logit difference|, top-1 agreement and the two perplexities; writes work/qwenrt-check.json.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gguf", required=True)
    ap.add_argument("--work", default=os.path.join(ROOT, "build", "demo-model"))
    ap.add_argument("--cli", default=os.path.join(ROOT, "build", "examples", "cli", "qwenrt-cli"))
    ap.add_argument("--threads", default="1")
    ap.add_argument("--export", type=int, default=0, metavar="N",
                    help="also write the first N held-out tokens and transformers' logits for them "
                         "to tests/data/tokens/demo-heldout.txt and "
                         "tests/data/logits/demo-f32.heldout.hf.f32 (the ctest demo_model_test), "
                         "and the held-out prompts to tests/data/demo/eval-prompts.jsonl "
                         "(demo_eval_test)")
    a = ap.parse_args()
    from evaluate import compare
    info = json.load(open(os.path.join(a.work, "vocab.json")))
    toks = np.array(open(os.path.join(a.work, "heldout.tokens.txt")).read().split(), dtype=np.int64)
    out = {}
    for be in ("ref", "cpu"):
        f = os.path.join(a.work, f"heldout.qwenrt-{be}.f32")
        subprocess.check_call([a.cli, "eval", "--model", a.gguf, "--tokens",
                               os.path.join(a.work, "heldout.tokens.txt"), "--out", f,
                               "--backend", be, "--threads", a.threads])
        out[be] = compare(f, os.path.join(a.work, "heldout.hf.f32"), info["vocab_size"], toks)
        print(be, "vs transformers:", json.dumps(out[be]))
        alt = os.path.join(a.work, "heldout.hf.llama-l2.f32")
        if os.path.exists(alt):  # transformers with the GGUF runtimes' L2 norm (evaluate.py)
            out[be + "_llama_l2"] = compare(f, alt, info["vocab_size"], toks)
            print(be, "vs transformers with llama.cpp's L2 norm:", json.dumps(out[be + "_llama_l2"]))
    with open(os.path.join(a.work, "qwenrt-check.json"), "w") as fh:
        json.dump(out, fh, indent=2)
    if a.export:
        V = info["vocab_size"]
        data_dir = os.path.join(ROOT, "tests", "data")
        with open(os.path.join(data_dir, "tokens", "demo-heldout.txt"), "w") as fh:
            fh.write(" ".join(map(str, toks[:a.export])) + "\n")
        hf = np.fromfile(os.path.join(a.work, "heldout.hf.f32"), dtype="<f4").reshape(-1, V)
        hf[:a.export].astype("<f4").tofile(os.path.join(data_dir, "logits",
                                                        "demo-f32.heldout.hf.f32"))
        alt = os.path.join(a.work, "heldout.hf.llama-l2.f32")
        if os.path.exists(alt):
            hl = np.fromfile(alt, dtype="<f4").reshape(-1, V)
            hl[:a.export].astype("<f4").tofile(os.path.join(data_dir, "logits",
                                                            "demo-f32.heldout.hf-llama-l2.f32"))
        os.makedirs(os.path.join(data_dir, "demo"), exist_ok=True)
        shutil.copy(os.path.join(a.work, "eval-prompts.jsonl"),
                    os.path.join(data_dir, "demo", "eval-prompts.jsonl"))


if __name__ == "__main__":
    main()

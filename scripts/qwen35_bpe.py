"""Qwen3.5's byte-level BPE pieces shared by the tokenizer tools (scripts/make_qwen35_vocab.py,
tools/demo-model/vocab.py): the added tokens in their published order
(docs/spec/tokenizer-and-chat.md section 2.2), GPT-2's byte-to-character map, the tiktoken rank
file and tiktoken's merge loop.
"""
import base64

ADDED = [
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
    "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>",
    "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>", "<tool_call>",
    "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>",
    "<|repo_name|>", "<|file_sep|>", "<tool_response>", "</tool_response>", "<think>", "</think>",
    "<|audio_start|>", "<|audio_end|>", "<tts_pad>", "<tts_text_bos>", "<tts_text_eod>",
    "<tts_text_bos_single>", "<|audio_pad|>",
]


def byte_map():
    """GPT-2's byte -> printable character map (ByteLevel pre-tokenizer)."""
    printable = list(range(0x21, 0x7F)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    m, n = {}, 0
    for b in range(256):
        if b in printable:
            m[b] = chr(b)
        else:
            m[b] = chr(0x100 + n)
            n += 1
    return m


def load_ranks(path):
    """A tiktoken file: base64 byte string and rank (= token id) per line."""
    ranks = {}
    with open(path, "rb") as f:
        for line in f.read().splitlines():
            if line:
                tok, rank = line.split()
                ranks[base64.b64decode(tok)] = int(rank)
    return ranks


def bpe(ranks, piece, max_rank=None):
    """Parts of `piece` after merging the lowest-ranked adjacent pair (below max_rank) until none."""
    parts = [bytes([b]) for b in piece]
    while True:
        best, best_i = None, None
        for i in range(len(parts) - 1):
            r = ranks.get(parts[i] + parts[i + 1])
            if r is not None and (max_rank is None or r < max_rank) and (best is None or r < best):
                best, best_i = r, i
        if best is None:
            return parts
        parts[best_i:best_i + 2] = [parts[best_i] + parts[best_i + 1]]

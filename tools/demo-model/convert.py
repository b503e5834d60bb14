"""HF directory -> GGUF with the peer's own converter (llama.cpp's convert_hf_to_gguf.py), run
in-process with one change: the cut vocabulary encodes the converter's check text differently
from the full one, so its hash names no pre-tokenizer; the pre-tokenizer IS Qwen3.5's (same
regex, NFC, byte-level), so we answer "qwen35" as the hash of the real tokenizer does."""
import os
import sys


def convert(hf_dir, out_file, outtype, converter):
    conv_dir = os.path.dirname(os.path.abspath(converter))
    sys.path.insert(0, os.path.join(conv_dir, "gguf-py"))
    sys.path.insert(0, conv_dir)
    import importlib.util
    spec = importlib.util.spec_from_file_location("convert_hf_to_gguf", converter)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    from conversion import base
    base.TextModel.get_vocab_base_pre = lambda self, tokenizer: "qwen35"
    argv = sys.argv
    sys.argv = [converter, hf_dir, "--outtype", outtype, "--outfile", out_file,
                "--model-name", "qwenrt-demo"]
    try:
        mod.main()
    finally:
        sys.argv = argv


if __name__ == "__main__":
    convert(*sys.argv[1:5])

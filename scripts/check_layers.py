#!/usr/bin/env python3
"""Checks that every #include in src/, capi/ and the C-API-only examples obeys docs/layers.md.

Layers, bottom to top: base <- text <- ops <- model <- session <- chat <- capi. A file may include
its own folder and the folders its row of ALLOWED lists; only chat and capi include text. src/testing/
(the synthetic-model writer and quantizers, a separate static library) may include any src/ layer,
but nothing in src/ or capi/ may include it. include/qwenrt/gguf.hpp and gguf_writer.hpp are
header-only and usable everywhere; include/qwenrt/qwenrt.h (the C ABI) only from capi/.
Inside ops/: ref/ and cuda/ never include cpu/; ref/ never includes cuda/.

Usage: scripts/check_layers.py [REPO_ROOT]   Prints each violation as FILE:LINE: ...; exit 1 if any.
Run by the `layers` ctest (tests/layers.cmake).
"""
import os
import re
import sys

# Layer of a file, from its path inside the repository (longest prefix wins).
LAYER_OF_DIR = {
    "src/base": "base",
    "src/text": "text",          # includes src/text/jinja
    "src/ops": "ops",            # includes src/ops/{ref,cpu,cuda}
    "src/model": "model",
    "src/session": "session",
    "src/chat": "chat",
    "src/testing": "testing",
    "capi": "capi",
}

# What each layer may include, besides itself and the header-only GGUF reader/writer.
ALLOWED = {
    "base": set(),
    "text": {"base"},
    "ops": {"base"},
    "model": {"base", "ops"},
    "session": {"base", "ops", "model"},
    "chat": {"base", "text", "ops", "model", "session"},
    "capi": {"base", "text", "ops", "model", "session", "chat", "qwenrt.h"},
    "testing": {"base", "text", "ops", "model", "session", "chat"},
}

# Examples that must stay on the C ABI: they may include qwenrt/qwenrt.h and nothing of src/.
# examples/common holds helpers shared by the examples (a terminal progress bar): checked the same
# way, so what a C-API example takes from it is on the C ABI too.
C_API_ONLY = ["examples/chat_repl", "examples/c", "examples/common"]

HEADER_ONLY = {"qwenrt/gguf.hpp", "qwenrt/gguf_writer.hpp"}
SOURCE_EXT = (".h", ".hpp", ".c", ".cc", ".cpp", ".cu", ".cuh")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def layer_of(rel):
    best = None
    for d, layer in LAYER_OF_DIR.items():
        if rel == d or rel.startswith(d + "/"):
            if best is None or len(d) > len(best[0]):
                best = (d, layer)
    return best[1] if best else None


def target_of(root, rel_file, inc):
    """Repository path and layer of an included project header; None for a system header."""
    here = os.path.dirname(rel_file)
    for base in (here, "src", "include"):
        cand = os.path.normpath(os.path.join(base, inc))
        if os.path.isfile(os.path.join(root, cand)):
            if cand == "include/qwenrt/qwenrt.h":
                return cand, "qwenrt.h"
            if cand.startswith("include/"):
                return cand, "header-only"
            return cand, layer_of(cand)
    return None


def ops_sub(rel):
    parts = rel.split("/")
    return parts[2] if len(parts) > 3 and parts[1] == "ops" else ""


def check(root):
    problems = []
    for top in ["src", "capi"] + C_API_ONLY:
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for name in sorted(files):
                if not name.endswith(SOURCE_EXT):
                    continue
                rel = os.path.relpath(os.path.join(dirpath, name), root)
                src_layer = layer_of(rel)
                with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
                    lines = f.readlines()
                for n, line in enumerate(lines, 1):
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    hit = target_of(root, rel, m.group(2))
                    if hit is None:
                        continue  # a system or third-party header
                    path, layer = hit
                    where = f"{rel}:{n}: includes {path}"
                    if src_layer is None and not rel.startswith(tuple(d + "/" for d in C_API_ONLY)):
                        problems.append(f"{rel}: in no layer: add its folder to docs/layers.md and "
                                        "LAYER_OF_DIR in scripts/check_layers.py")
                        break
                    if src_layer is None:  # a C-API-only example
                        if layer != "qwenrt.h" and not path.startswith("examples/common/"):
                            problems.append(f"{where}: this example uses only the C ABI (qwenrt.h)")
                        continue
                    if layer == "header-only" or layer == src_layer:
                        if src_layer == "ops" and layer == "ops":
                            a, b = ops_sub(rel), ops_sub(path)
                            if (a in ("ref", "cuda") and b == "cpu") or (a == "ref" and b == "cuda"):
                                problems.append(f"{where}: ops/{a}/ may not include ops/{b}/")
                        continue
                    if layer not in ALLOWED[src_layer]:
                        what = "the C ABI header" if layer == "qwenrt.h" else f"layer '{layer}'"
                        problems.append(f"{where}: layer '{src_layer}' may not include {what}")
    return problems


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    problems = check(os.path.abspath(root))
    for p in problems:
        print(p)
    if problems:
        print(f"check_layers: {len(problems)} include(s) break the layering of docs/layers.md")
        return 1
    print("check_layers: OK (every include in src/, capi/ and the C-API examples follows docs/layers.md)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

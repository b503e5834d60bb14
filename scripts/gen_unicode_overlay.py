#!/usr/bin/env python3
"""Generates the Unicode overlay table of src/text/unicode.cpp.

utf8proc from Debian knows Unicode 15.0; llama.cpp's pre-tokenizer tables come from the latest UCD
(>= 15.1). This script lists the code points whose L/M/N class differs between the installed
libutf8proc and the `regex` module's (newer) Unicode tables, as C++ range initialisers.
Run: python3 scripts/gen_unicode_overlay.py   (needs libutf8proc and `pip install regex`)
"""
import ctypes
import ctypes.util

import regex

lib = ctypes.CDLL(ctypes.util.find_library("utf8proc") or "libutf8proc.so.3")
lib.utf8proc_category.restype = ctypes.c_int
lib.utf8proc_category.argtypes = [ctypes.c_int32]
lib.utf8proc_unicode_version.restype = ctypes.c_char_p


def utf8proc_class(cp):
    k = lib.utf8proc_category(cp)
    if 1 <= k <= 5:
        return 1  # L
    if 6 <= k <= 8:
        return 2  # M
    if 9 <= k <= 11:
        return 4  # N
    return 0


L, M, N = regex.compile(r"\p{L}"), regex.compile(r"\p{M}"), regex.compile(r"\p{N}")
ranges = []
for cp in range(0x110000):
    if 0xD800 <= cp < 0xE000:
        continue
    c = chr(cp)
    want = (1 if L.match(c) else 0) | (2 if M.match(c) else 0) | (4 if N.match(c) else 0)
    if want == utf8proc_class(cp):
        continue
    if ranges and ranges[-1][1] == cp - 1 and ranges[-1][2] == want:
        ranges[-1][1] = cp
    else:
        ranges.append([cp, cp, want])
names = {0: "0", 1: "kLetter", 2: "kMark", 4: "kNumber"}
print(f"// utf8proc {lib.utf8proc_unicode_version().decode()} vs regex {regex.__version__}: "
      f"{len(ranges)} ranges")
for first, last, flags in ranges:
    print(f"    {{0x{first:X}, 0x{last:X}, {names[flags]}}},")

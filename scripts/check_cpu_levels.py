#!/usr/bin/env python3
"""Checks that the ISA levels of the CPU kernels cannot leak into each other at link time.

Each level's copy of src/ops/cpu/*.cpp (cmake/QwenrtCpuLevels.cmake) defines its own functions in
qwenrt::isa_<level>::, but a header's inline function or a template from outside that namespace (the
standard library's, fmt's, qwenrt::'s own) is emitted as a weak symbol in every object that does not
inline it, and the linker keeps one copy of each for the whole program: if the AVX-512 copy won, the
baseline code would execute AVX-512 instructions. cmake/qwenrt_level_compile.sh renames each such
function of a level above the baseline to NAME.isa_<level>. This checks, on the built objects, that
every level object has
  - no weak function outside its level namespace under a name another level could also define, and
  - no COMDAT group of code under a name from outside its level namespace (the linker would merge it
    with another level's group of that name and keep one of them), and
  - no weak vtable outside its level namespace (the program would keep one, whose entries might be
    this level's renamed copies).
It also checks that the renaming happened at all: a build where it silently did nothing would pass
the first rule only if no kernel emitted a standard-library function out of line, so at least one
renamed function must exist across the levels (the kernels use std::vector and std::function).

usage: check_cpu_levels.py NM READELF LEVEL=OBJ_DIR...
"""
import pathlib
import re
import subprocess
import sys


def defined_symbols(nm, obj):
    """[(nm type letter, mangled name)] of the symbols obj defines."""
    out = subprocess.run([nm, "--defined-only", str(obj)], check=True, capture_output=True, text=True).stdout
    return [(f[1], f[2]) for f in (line.split() for line in out.splitlines()) if len(f) == 3]


def group_signatures(readelf, obj):
    """The signature names of obj's COMDAT groups."""
    out = subprocess.run([readelf, "-gW", str(obj)], check=True, capture_output=True, text=True).stdout
    return re.findall(r"^COMDAT group section .* \[([^\] ]+)\] contains", out, re.M)


def main():
    nm, readelf, levels = sys.argv[1], sys.argv[2], sys.argv[3:]
    problems, renamed, objects = [], 0, 0
    for spec in levels:
        level, obj_dir = spec.split("=", 1)
        ns = f"isa_{level}"
        for obj in sorted(pathlib.Path(obj_dir).rglob("*.o")):
            objects += 1
            symbols = defined_symbols(nm, obj)
            data = {sym for kind, sym in symbols if kind in ("V", "u")}
            for sig in group_signatures(readelf, obj):
                if ns not in sig and sig not in data and not sig.startswith("DW.ref."):
                    problems.append(f"{level}: {obj.name}: COMDAT group {sig} merges with the other levels' groups")
            for kind, sym in symbols:
                if ns in sym:
                    renamed += sym.endswith("." + ns)
                    continue
                if kind == "W":
                    problems.append(f"{level}: {obj.name}: weak function {sym} keeps a name every level shares")
                elif kind in ("V", "u") and sym.startswith("_ZTV"):
                    problems.append(f"{level}: {obj.name}: weak vtable {sym} outside the level namespace")
    if objects == 0:
        problems.append("no level objects found (is the build directory right?)")
    elif renamed == 0:
        problems.append("no weak function was renamed to a level-private name: is cmake/qwenrt_level_compile.sh the launcher?")
    for p in problems:
        print(p)
    print(f"check_cpu_levels: {objects} level objects, {renamed} level-private weak functions, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

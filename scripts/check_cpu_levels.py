#!/usr/bin/env python3
"""Checks that the ISA levels of the CPU kernels cannot leak into each other at link time.

Each level's copy of src/ops/cpu/*.cpp (cmake/QwenrtCpuLevels.cmake) defines its own functions in
qwenrt::isa_<level>::, but a header's inline function or a template from outside that namespace (the
standard library's, fmt's, qwenrt::'s own) is emitted as a weak symbol in every object that does not
inline it, and the linker keeps one copy of each for the whole program: if the AVX-512 copy won, the
baseline code would execute AVX-512 instructions. So every such weak function defined by a level
above the baseline must also be defined by the baseline copy of the same source file with the same
instructions (then whichever copy the linker keeps is right for every level).

usage: check_cpu_levels.py NM OBJDUMP BASELINE_OBJ_DIR LEVEL=OBJ_DIR...
"""
import pathlib
import re
import subprocess
import sys


def functions(objdump, obj):
    """{mangled name: instruction text without addresses} of the functions defined in obj."""
    out = subprocess.run([objdump, "-d", "--no-show-raw-insn", "-r", str(obj)], check=True,
                         capture_output=True, text=True).stdout
    funcs, name, body = {}, None, []
    for line in out.splitlines():
        m = re.match(r"^[0-9a-f]+ <(.+)>:$", line)
        if m:
            if name:
                funcs[name] = "\n".join(body)
            name, body = m.group(1), []
        elif name and "\t" in line:
            # "  12:\tmov ...": drop the address; jump targets inside the function are relative.
            insn = line.split("\t", 1)[1]
            body.append(re.sub(r"\b[0-9a-f]+ <", "<", insn))
    if name:
        funcs[name] = "\n".join(body)
    return funcs


def weak_functions(nm, obj):
    """Mangled names of the weak symbols of obj."""
    out = subprocess.run([nm, "--defined-only", str(obj)], check=True, capture_output=True, text=True).stdout
    return [l.split()[-1] for l in out.splitlines() if len(l.split()) == 3 and l.split()[1] in ("W", "V")
            and not l.split()[-1].startswith("DW.ref.")]


def main():
    nm, objdump, base_dir, levels = sys.argv[1], sys.argv[2], pathlib.Path(sys.argv[3]), sys.argv[4:]
    problems, checked = [], 0
    for spec in levels:
        level, obj_dir = spec.split("=", 1)
        ns = f"N6qwenrt{len('isa_' + level)}isa_{level}"
        for obj in sorted(pathlib.Path(obj_dir).rglob("*.o")):
            weak = [s for s in weak_functions(nm, obj) if ns not in s]
            if not weak:
                continue
            mine = functions(objdump, obj)
            base_obj = base_dir / obj.relative_to(obj_dir)
            base = functions(objdump, base_obj) if base_obj.exists() else {}
            for sym in weak:
                checked += 1
                if sym not in mine:
                    continue  # a weak data symbol (a guard variable, a static of an inline function)
                if sym not in base:
                    problems.append(f"{level}: {obj.name}: {sym} has no baseline copy")
                elif base[sym] != mine[sym]:
                    problems.append(f"{level}: {obj.name}: {sym} differs from its baseline copy")
    for p in problems:
        print(p)
    print(f"check_cpu_levels: {checked} weak symbols outside the level namespaces, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

#!/bin/sh
# The compiler launcher of the CPU kernels' ISA levels above the baseline (cmake/QwenrtCpuLevels.cmake):
# runs the compile command, then renames in the object it wrote every weak function outside the
# level's namespace to NAME.isa_<level>.
#
# Why: an inline function or template from outside qwenrt::isa_<level>:: (the standard library's, fmt's,
# qwenrt::'s own) that the level emits out of line is a weak symbol, and the linker keeps one copy of each
# for the whole program: the AVX-512 copy of std::vector<float>::_M_default_append could then be the one
# the baseline code calls. Renamed, each level calls its own copies (the COMDAT group is renamed with its
# signature symbol, so copies still merge within a level) and no other code can reach them. The
# signature of a group that is not itself a weak function (GCC's C5/D5 symbol of a constructor or
# destructor group) is renamed too, or the group would still merge with the other levels' groups of
# that name. Weak data (guard variables, statics of inline functions) keeps its name, and so does its
# group: it is one object for the whole program.
# scripts/check_cpu_levels.py (the cpu_levels_weak_symbols test) checks the result.
#
# usage: qwenrt_level_compile.sh LEVEL NM READELF OBJCOPY COMPILER ARGS...
set -eu
level=$1 nm=$2 readelf=$3 objcopy=$4
shift 4
# An empty argument where a launcher could have been is skipped.
while [ $# -gt 0 ] && [ -z "$1" ]; do shift; done
"$@"
obj="" prev=""
for arg in "$@"; do
  [ "$prev" = "-o" ] && obj=$arg
  prev=$arg
done
[ -n "$obj" ] && [ -f "$obj" ] || exit 0
map="$obj.isa-rename"
{
  "$nm" --defined-only "$obj"
  # "COMDAT group section [    1] `.group' [_ZNSt6vectorIfSaIfEED5Ev] contains 2 sections:"
  "$readelf" -gW "$obj" | sed -n 's/^COMDAT group section .* \[\([^] ]*\)\] contains.*/group \1/p'
} | awk -v ns="isa_$level" '
  $1 == "group" { if (index($2, ns) == 0 && !($2 in data) && $2 !~ /^DW\.ref\./ && !($2 in done)) { print $2, $2 "." ns; done[$2] = 1 }; next }
  NF == 3 && ($2 == "V" || $2 == "u") { data[$3] = 1; next }
  NF == 3 && $2 == "W" && index($3, ns) == 0 { print $3, $3 "." ns; done[$3] = 1 }
' > "$map"
if [ -s "$map" ]; then
  "$objcopy" --redefine-syms="$map" "$obj"
fi
rm -f "$map"

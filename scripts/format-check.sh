#!/usr/bin/env bash
# Checks that the C, C++ and CUDA sources are formatted as .clang-format says (clang-format
# --dry-run --Werror). Usage:
#   scripts/format-check.sh [PATH...]        check the sources under PATHs (files or folders;
#                                            default: the whole tree)
#   scripts/format-check.sh --fix [PATH...]  reformat them in place instead
# Left out: tests/data/ (fixtures) and the paths in EXCLUDE (vendored code; none today).
# clang-format comes from Debian (scripts/install-deps.sh); CLANG_FORMAT picks another binary.
set -euo pipefail
cd "$(dirname "$0")/.."
EXCLUDE_RE='^(tests/data/)'

fix=0
if [ "${1:-}" = --fix ]; then
  fix=1
  shift
fi
CF=${CLANG_FORMAT:-}
if [ -z "$CF" ]; then
  for c in clang-format clang-format-19 clang-format-16 clang-format-15 clang-format-14; do
    if command -v "$c" > /dev/null; then CF=$c; break; fi
  done
fi
if [ -z "$CF" ]; then
  echo "format-check: clang-format not found (bash scripts/install-deps.sh installs it)" >&2
  exit 2
fi

# Tracked files only (build folders and scratch files stay out); outside a git checkout, find.
SOURCE_RE='\.(h|hpp|c|cc|cpp|cu|cuh)$'
if git rev-parse --is-inside-work-tree > /dev/null 2>&1; then
  mapfile -t files < <(git ls-files -- "${@:-.}" | grep -E "$SOURCE_RE" | grep -Ev "$EXCLUDE_RE" || true)
else
  mapfile -t files < <(find "${@:-.}" -type f | sed 's|^\./||' | grep -E "$SOURCE_RE" |
                       grep -Ev "$EXCLUDE_RE|^build" || true)
fi
if ((${#files[@]} == 0)); then
  echo "format-check: no files" >&2
  exit 2
fi

if ((fix)); then
  "$CF" -i --style=file "${files[@]}"
  echo "format-check: formatted ${#files[@]} files with $("$CF" --version)"
  exit 0
fi
# One clang-format call per file, so the summary can name every file that differs.
bad=()
for f in "${files[@]}"; do
  "$CF" --dry-run --Werror --style=file "$f" > /dev/null 2>&1 || bad+=("$f")
done
if ((${#bad[@]})); then
  printf '  %s\n' "${bad[@]}"
  echo "format-check: ${#bad[@]} of ${#files[@]} files are not clang-formatted" \
       "(see one: $CF --dry-run --style=file FILE; fix: scripts/format-check.sh --fix FILE)" >&2
  exit 1
fi
echo "format-check: ${#files[@]} files OK ($("$CF" --version))"

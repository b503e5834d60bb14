#!/usr/bin/env bash
# A fuzzing campaign that counts (not run by CI): each libFuzzer target of tests/fuzz runs until it
# has executed FUZZ_RUNS inputs (default 2,000,000) or FUZZ_MAX_SECONDS have passed (default 4 h),
# from the tree's corpus plus what earlier campaigns found ($BUILD_DIR/corpus/<name>, kept between
# runs). Then the corpus is minimised (libFuzzer -merge=1: the smallest set of inputs with the same
# coverage) and, with FUZZ_KEEP=1, written back into tests/fuzz/corpus/<name> so that CI's smoke
# runs (scripts/fuzz-smoke.sh) start from it. A table of executions, rate, coverage, corpus size and
# findings is written to $FUZZ_TABLE (default docs/fuzzing-campaign.md) and printed.
#   FUZZ_TARGETS="gguf tokenizer" FUZZ_RUNS=2000000 FUZZ_KEEP=1 scripts/fuzz-campaign.sh
# The build is scripts/fuzz-smoke.sh's (clang, ASan + UBSan + libFuzzer, $BUILD_DIR default
# build-fuzz): it is called with FUZZ_SECONDS=1 first, which builds and checks each target starts.
# A finding (crash, sanitizer report, timeout, out-of-memory) stops that target's run; the input is
# in $BUILD_DIR/artifacts/<name>/ and the table names it. Exit status 1 when any target has one.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build-fuzz}
RUNS=${FUZZ_RUNS:-2000000}
MAX_SECONDS=${FUZZ_MAX_SECONDS:-14400}
TABLE=${FUZZ_TABLE:-docs/fuzzing-campaign.md}
TARGETS=(${FUZZ_TARGETS:-gguf model_load tokenizer session_load chat_template constraint capi_chat})
# Inputs larger than the largest seed are of no use to the targets (fuzz-smoke.sh's -max_len).
MAX_LEN=262144

BUILD_DIR="$BUILD_DIR" FUZZ_TARGETS="${TARGETS[*]}" FUZZ_SECONDS=1 bash scripts/fuzz-smoke.sh > /dev/null

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:allocator_may_return_null=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
# final_stat NAME LOG: the value of libFuzzer's -print_final_stats line "stat::NAME: V" (empty if none).
final_stat() { grep -E "^stat::$1:" "$2" | tail -1 | awk '{print $2}' || true; }
rows=()
failed=()
for t in "${TARGETS[@]}"; do
  bin="$BUILD_DIR/tests/fuzz/${t}_fuzz"
  found="$BUILD_DIR/corpus/$t"
  artifacts="$BUILD_DIR/artifacts/$t"
  log="$artifacts/campaign.log"
  mkdir -p "$found" "$artifacts"
  before=$(ls "tests/fuzz/corpus/$t" | wc -l)
  echo "== $t: up to $RUNS executions or $MAX_SECONDS s"
  start=$(date +%s)
  finding="none"
  if ! "$bin" -runs="$RUNS" -max_total_time="$MAX_SECONDS" -timeout=10 -rss_limit_mb=2048 \
      -max_len="$MAX_LEN" -print_final_stats=1 -artifact_prefix="$artifacts/" \
      "$found" "tests/fuzz/corpus/$t" > "$log" 2>&1; then
    finding=$(grep -oE 'Test unit written to [^ ]+' "$log" | tail -1 | awk '{print $NF}' || true)
    finding=${finding:-"exit without an artifact (see $log)"}
    failed+=("$t")
  fi
  secs=$(( $(date +%s) - start ))
  execs=$(final_stat number_of_executed_units "$log")
  execs=${execs:-0}
  cov=$(grep -oE 'cov: [0-9]+ ft: [0-9]+' "$log" | tail -1 || true)
  rss=$(final_stat peak_rss_mb "$log")
  # Minimise: the smallest subset of (tree corpus + found inputs) with the same coverage.
  min="$artifacts/minimised"
  rm -rf "$min" && mkdir -p "$min"
  "$bin" -merge=1 -max_len="$MAX_LEN" -timeout=10 -rss_limit_mb=2048 "$min" \
    "tests/fuzz/corpus/$t" "$found" > "$artifacts/merge.log" 2>&1 || true
  after=$(ls "$min" | wc -l)
  if [ "${FUZZ_KEEP:-0}" = 1 ] && [ "$after" -gt 0 ]; then
    rm -rf "tests/fuzz/corpus/$t" && cp -r "$min" "tests/fuzz/corpus/$t"
  fi
  rate=$(( secs > 0 ? execs / secs : execs ))
  rows+=("| $t | $execs | $secs | $rate | ${cov:-?} | ${rss:-?} | $before → $after | $finding |")
done

{
  echo "# Fuzzing campaign"
  echo
  echo "\`scripts/fuzz-campaign.sh\` on $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores"
  echo "($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), commit"
  echo "$(git rev-parse --short HEAD 2>/dev/null || echo '?'); goal $RUNS executions per target,"
  echo "at most $MAX_SECONDS s each. Corpus: seed files before → minimised after (FUZZ_KEEP=1 writes"
  echo "them back into tests/fuzz/corpus)."
  echo
  echo "| target | executions | seconds | exec/s | coverage (libFuzzer cov / ft) | peak RSS MiB | corpus | finding |"
  echo "|---|---|---|---|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
} > "$TABLE"
cat "$TABLE"
if [ ${#failed[@]} -ne 0 ]; then
  echo "fuzz campaign found inputs to fix: ${failed[*]}"
  exit 1
fi

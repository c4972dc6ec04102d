#!/usr/bin/env bash
# A fastpull that traces every run: give it to the harness as `--fastpull`, so that each measured run,
# not only the one extra traced run per scenario, leaves its trace (the slow run of a bimodal scenario
# is rarely the traced one):
#   FASTPULL_BIN=.build/shipped/release/fastpull TRACE_DIR=/tmp/traces \
#     .build/release/fastpull-bench --fastpull scripts/traced-fastpull.sh --scenario sources-kinds --runs 12
# Each run appends "TRACE SECONDS EXIT-CODE" to $TRACE_DIR/index.txt.
set -u
bin="${FASTPULL_BIN:-$(dirname "$0")/../.build/shipped/release/fastpull}"
dir="${TRACE_DIR:-/tmp/fastpull-traces}"
case "${1:-}" in --help | --version) exec "$bin" "$@" ;; esac
mkdir -p "$dir"
trace="$dir/$(date +%s%N).trace"
start=$(date +%s%N)
"$bin" --trace "$trace" "$@"
status=$?
end=$(date +%s%N)
echo "$trace $(((end - start) / 1000000)) ms $status" >> "$dir/index.txt"
exit $status

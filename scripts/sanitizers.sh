#!/usr/bin/env bash
# Runs the test suite under ThreadSanitizer and AddressSanitizer, each build in its own scratch folder.
#
#   scripts/sanitizers.sh [thread|address|both] [SWIFT TEST ARGUMENTS...]
#
#   scripts/sanitizers.sh                                   both sanitizers, the whole suite
#   scripts/sanitizers.sh thread --filter FastpullIntegrationTests
#   scripts/sanitizers.sh both --filter 'FaultMatrixTests|SecurityTests'
#   scripts/sanitizers.sh thread --no-parallel           one test at a time: far fewer timing failures
#
# Arguments after the sanitizer choice go to `swift test` unchanged (--filter, --skip, --parallel, ...).
# Scratch folders: $SANITIZER_SCRATCH/thread and $SANITIZER_SCRATCH/address (default
# /tmp/fastpull-sanitizers), so they never disturb the default .build or anyone else's build.
# Reports go to files, $SANITIZER_SCRATCH/reports/<sanitizer>.<pid>, one per process (the test runner
# and every `fastpull` the CLI tests start), not to stderr: a child whose stderr pipe fills up with
# reports would block. TSan reports fail the run; ASan stops the process at the first error. Leak
# detection is off: the Swift runtime keeps metadata caches alive until exit, which LeakSanitizer
# reports as leaks. scripts/tsan-suppressions.txt, when present, is passed to TSan.
# Prints one summary line per sanitizer (with the distinct racing functions) and exits non-zero if
# either failed.
set -uo pipefail

cd "$(dirname "$0")/.."
SCRATCH="${SANITIZER_SCRATCH:-/tmp/fastpull-sanitizers}"

choice=both
case "${1:-}" in
thread | address | both)
    choice="$1"
    shift
    ;;
esac
sanitizers=(thread address)
[[ $choice != both ]] && sanitizers=("$choice")

reports="$SCRATCH/reports"
rm -rf "$reports"
mkdir -p "$reports"
tsan_options="halt_on_error=0 second_deadlock_stack=1 log_path=$reports/thread"
[[ -f scripts/tsan-suppressions.txt ]] && tsan_options+=" suppressions=$PWD/scripts/tsan-suppressions.txt"
export TSAN_OPTIONS="${TSAN_OPTIONS:-$tsan_options}"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0 log_path=$reports/address}"
# Tests that bound their waits (the fault matrix's watchdogs) allow this many times longer.
export FASTPULL_TEST_TIME_SCALE="${FASTPULL_TEST_TIME_SCALE:-5}"

declare -A outcome
failed=0
for sanitizer in "${sanitizers[@]}"; do
    log="$SCRATCH/$sanitizer.log"
    mkdir -p "$SCRATCH"
    echo "== swift test --sanitize=$sanitizer $* (log: $log)"
    started=$SECONDS
    swift test --sanitize="$sanitizer" --scratch-path "$SCRATCH/$sanitizer" "$@" 2>&1 | tee "$log"
    status=${PIPESTATUS[0]}
    count=$(cat "$reports/$sanitizer".* 2>/dev/null |
        grep -c -E '^(WARNING: ThreadSanitizer|==[0-9]+==ERROR: AddressSanitizer)')
    if [[ $status == 0 && $count == 0 ]]; then
        outcome[$sanitizer]="passed"
    else
        outcome[$sanitizer]="FAILED (exit $status, $count reports in $reports/$sanitizer.*)"
        failed=1
    fi
    outcome[$sanitizer]+=" in $((SECONDS - started))s"
done

echo
for sanitizer in "${sanitizers[@]}"; do
    printf '%-8s %s\n' "$sanitizer" "${outcome[$sanitizer]}"
    # The first frame of every report, demangled, counted: a short list of what to look at.
    cat "$reports/$sanitizer".* 2>/dev/null | awk '
        /^(WARNING: ThreadSanitizer|==[0-9]+==ERROR: AddressSanitizer)/ { want = 1; next }
        want && /^ +#0 / { print ($3 == "in" ? $4 : $2); want = 0 }' | swift demangle --simplified 2>/dev/null |
        sed 's/^/    /' | sort | uniq -c | sort -rn | head -40
done
exit $failed

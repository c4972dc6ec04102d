#!/usr/bin/env bash
# Builds the libFuzzer targets and runs each for a set time.
#
#   Fuzz/run.sh [SECONDS] [TARGET...]       default: 60 seconds, every target
#   Fuzz/run.sh --build-only [TARGET...]    only build
#   Fuzz/run.sh --list                      print the target names
#
# Each target is one entry file in Fuzz/Targets/<target>.swift plus Fuzz/Support/FuzzSupport.swift plus
# the library source files it needs, listed below: the library's types are internal, so they are compiled
# into the fuzzer binary itself (`swiftc -sanitize=fuzzer,address -parse-as-library`). Files that import
# COpenSSL get `-I Sources/COpenSSL -lssl -lcrypto`.
#
# Seeds come from Fixtures/fuzz/<target>/ (read only); the growing corpus, logs and binaries live under
# $FUZZ_WORK (default /tmp/fastpull-fuzz). Crashing inputs are written to $FUZZ_CRASHES/<target>/
# (default $FUZZ_WORK/crashes); reproduce one with `$FUZZ_WORK/bin/fuzz-<target> FILE`.
# FUZZ_PARALLEL=N runs N targets at once (default 1). Exits 1 when any target crashed.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
WORK="${FUZZ_WORK:-/tmp/fastpull-fuzz}"
CRASHES="${FUZZ_CRASHES:-$WORK/crashes}"
PARALLEL="${FUZZ_PARALLEL:-1}"
LIB="Sources/Fastpull"

HTTP_CORE="$LIB/HTTP/HTTPHeaders.swift $LIB/HTTP/HTTPParseError.swift $LIB/HTTP/ResponseHead.swift"
DIGESTS="$LIB/Verify/ChecksumExpectation.swift $LIB/Download/Checksum.swift $LIB/Download/FastpullError.swift
  $LIB/Verify/Digest.swift $LIB/Verify/CRC32C.swift $LIB/Verify/Base64.swift"

TARGETS=(response-head chunked content-range digest-headers checksum-file journal content-disposition
    batch-file)

sources() {
    case "$1" in
    response-head) echo "$HTTP_CORE $LIB/HTTP/ResponseHeadParser.swift" ;;
    chunked) echo "$HTTP_CORE $LIB/HTTP/ChunkedDecoder.swift" ;;
    content-range) echo "$HTTP_CORE $LIB/HTTP/ContentRange.swift" ;;
    digest-headers)
        echo "$HTTP_CORE $DIGESTS $LIB/Verify/ServerDigests.swift $LIB/Verify/StructuredFieldDictionary.swift"
        ;;
    checksum-file) echo "$HTTP_CORE $DIGESTS $LIB/Verify/ChecksumFile.swift" ;;
    journal)
        # Requests.swift would pull in most of the library for one constant: Support/JournalStubs.swift
        # stands in for it.
        echo "$HTTP_CORE $DIGESTS $LIB/Resume/Journal.swift $LIB/Download/Version.swift $LIB/Probe/RemoteFile.swift
          $LIB/Plan/Segment.swift Fuzz/Support/JournalStubs.swift"
        ;;
    content-disposition) echo "$LIB/CommandLine/OutputName.swift" ;;
    batch-file)
        # CommandOptions.swift would pull in most of the library for one function:
        # Support/BatchFileStubs.swift stands in for it. UsageError lives in ArgumentParser.swift, which needs
        # OptionTable.swift.
        echo "$HTTP_CORE $DIGESTS $LIB/CommandLine/BatchFile.swift $LIB/CommandLine/ArgumentParser.swift
          $LIB/CommandLine/OptionTable.swift Fuzz/Support/BatchFileStubs.swift"
        ;;
    *) return 1 ;;
    esac
}

build() {
    local target="$1" binary="$WORK/bin/fuzz-$1"
    local files
    files="Fuzz/Targets/$target.swift Fuzz/Support/FuzzSupport.swift $(sources "$target")"
    # Rebuild only when a source is newer than the binary.
    if [[ -x "$binary" ]]; then
        local stale=0 file
        for file in $files; do [[ "$file" -nt "$binary" ]] && stale=1; done
        [[ $stale == 0 ]] && return 0
    fi
    local openssl=()
    # shellcheck disable=SC2086
    if grep -lq '^import COpenSSL' $files; then openssl=(-I Sources/COpenSSL -lssl -lcrypto); fi
    echo "building $target"
    # shellcheck disable=SC2086
    if ! swiftc -swift-version 6 -O -g -sanitize=fuzzer,address -parse-as-library \
        -module-name "FastpullFuzz_${target//-/_}" -package-name FastpullFuzz "${openssl[@]}" $files \
        -o "$binary" \
        >"$WORK/logs/$target.build.log" 2>&1; then
        grep -v 'Cannot export local symbol' "$WORK/logs/$target.build.log" >&2
        echo "build of $target failed" >&2
        return 1
    fi
    # The linker's "Cannot export local symbol" lines are harmless; anything else is worth seeing.
    grep -v 'Cannot export local symbol' "$WORK/logs/$target.build.log" | grep -i 'warning\|error' >&2 || true
}

run() {
    local target="$1" seconds="$2"
    local corpus="$WORK/corpus/$target" crashes="$CRASHES/$target" log="$WORK/logs/$target.log"
    mkdir -p "$corpus" "$crashes"
    local dictionary=()
    [[ -f "Fuzz/Dictionaries/$target.dict" ]] && dictionary=(-dict="Fuzz/Dictionaries/$target.dict")
    local status=0
    SWIFT_BACKTRACE=enable=no "$WORK/bin/fuzz-$target" -max_total_time="$seconds" -print_final_stats=1 \
        -timeout=10 -rss_limit_mb=2048 \
        -max_len=16384 -artifact_prefix="$crashes/" "${dictionary[@]}" "$corpus" "Fixtures/fuzz/$target" \
        >"$log" 2>&1 || status=$?
    local executions rate found
    executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    found=$(find "$crashes" -type f | wc -l)
    printf '%-16s %8ss %14s executions %10s/s  corpus %6s  crashes %s%s\n' "$target" "$seconds" \
        "${executions:-?}" "${rate:-?}" "$(find "$corpus" -type f | wc -l)" "$found" \
        "$([[ $status != 0 ]] && echo "  (exit $status, see $log)")"
    [[ $status == 0 ]]
}

cd "$ROOT"
if [[ "${1:-}" == "--list" ]]; then
    printf '%s\n' "${TARGETS[@]}"
    exit 0
fi
BUILD_ONLY=0
SECONDS_PER_TARGET=60
if [[ "${1:-}" == "--build-only" ]]; then
    BUILD_ONLY=1
    shift
elif [[ "${1:-}" =~ ^[0-9]+$ ]]; then
    SECONDS_PER_TARGET="$1"
    shift
fi
SELECTED=("$@")
[[ ${#SELECTED[@]} == 0 ]] && SELECTED=("${TARGETS[@]}")
for target in "${SELECTED[@]}"; do
    sources "$target" >/dev/null || { echo "unknown target $target (try --list)" >&2; exit 2; }
done

mkdir -p "$WORK/bin" "$WORK/logs" "$CRASHES"
for target in "${SELECTED[@]}"; do build "$target"; done
[[ $BUILD_ONLY == 1 ]] && exit 0

echo "fuzzing ${SELECTED[*]} for ${SECONDS_PER_TARGET}s each, $PARALLEL at a time; crashes go to $CRASHES"
failed=0
running=0
for target in "${SELECTED[@]}"; do
    if ((running >= PARALLEL)); then
        wait -n || failed=1
        running=$((running - 1))
    fi
    run "$target" "$SECONDS_PER_TARGET" &
    running=$((running + 1))
done
while ((running > 0)); do
    wait -n || failed=1
    running=$((running - 1))
done
exit $failed

#!/usr/bin/env bash
# Runs one real download on a machine without internet: builds fastpull and the fixture server
# (showing the build; the first one takes a minute or two), serves 256 MiB of generated content on
# loopback at about 50 MB/s in all and 10 MB/s per connection (so the download takes ~5 s, long enough
# to watch the progress display and the connection count grow), and pulls it with fastpull. The file
# stays where it was saved, and the script says where. Any arguments go to fastpull.
# Usage: scripts/try.sh [FASTPULL OPTIONS]
# FASTPULL_TRY_BIN=FOLDER uses the fastpull and fastpull-fixture-server already built there (the test
# suite runs the script that way) instead of building.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -n "${FASTPULL_TRY_BIN:-}" ]; then
    bin=$FASTPULL_TRY_BIN
    echo "using the build in $bin"
else
    scripts/build-deps.sh
    echo "building fastpull and its test server (release)…"
    swift build -c release --product fastpull
    swift build -c release --product fastpull-fixture-server
    bin=$(swift build -c release --show-bin-path)
fi
work=$(mktemp -d)
folder="${TMPDIR:-/tmp}/fastpull-try"
mkdir -p "$folder"
"$bin/fastpull-fixture-server" --port 0 --total-rate 50000000 >"$work/server.url" &
server=$!
trap 'kill "$server" 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 100); do [ -s "$work/server.url" ] && break; sleep 0.1; done
base=$(head -n 1 "$work/server.url")
echo "downloading 256 MiB from $base (loopback, ~5 s)…"
"$bin/fastpull" --force "$@" "$base/gen/256M?rate=10000000" -o "$folder/256M.bin"
echo "the file is $folder/256M.bin; remove it with: rm -r '$folder'"

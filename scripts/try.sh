#!/usr/bin/env bash
# Runs one real download on a machine without internet: builds fastpull and the fixture server,
# serves 256 MiB of generated content on loopback, and pulls it with fastpull (any extra arguments
# are passed to fastpull). Usage: scripts/try.sh [FASTPULL OPTIONS]
set -euo pipefail
cd "$(dirname "$0")/.."
swift build -c release --product fastpull >/dev/null
swift build -c release --product fastpull-fixture-server >/dev/null
bin=$(swift build -c release --show-bin-path)
out=$(mktemp -d)
"$bin/fastpull-fixture-server" --port 0 >"$out/server.url" &
server=$!
trap 'kill "$server" 2>/dev/null; rm -rf "$out"' EXIT
for _ in $(seq 100); do [ -s "$out/server.url" ] && break; sleep 0.1; done
base=$(head -n 1 "$out/server.url")
"$bin/fastpull" "$@" "$base/gen/256M?rate=64000000" -o "$out/256M.bin"

#!/usr/bin/env bash
# The test command (README, CI): installs the real servers the interoperability tests run against
# (scripts/test-deps.sh; quick when they are present), then runs `swift test` with any arguments given,
# e.g. scripts/test.sh --filter FastpullInteropTests.
# Without arguments the simulator runs after the rest: it keeps both cores busy for its run, and the
# tests that watch a live terminal or count a server's bytes should not share the machine with it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/test-deps.sh
if [ "$#" -gt 0 ]; then
    exec swift test "$@"
fi
swift test --skip SimulatorTests
exec swift test --skip-build --filter SimulatorTests

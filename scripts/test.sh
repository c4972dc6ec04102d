#!/usr/bin/env bash
# The test command (README, CI): installs the real servers the interoperability tests run against
# (scripts/test-deps.sh; quick when they are present), then runs `swift test` with any arguments given,
# e.g. scripts/test.sh --filter FastpullInteropTests.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/test-deps.sh
exec swift test "$@"

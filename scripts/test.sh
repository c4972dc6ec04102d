#!/usr/bin/env bash
# The test command (README, CI): installs the real servers the interoperability tests run against
# (scripts/test-deps.sh; quick when they are present), then runs `swift test` with any arguments given,
# e.g. scripts/test.sh --filter FastpullInteropTests.
# Without arguments the suite runs in parts, so that the heavy ones do not share two cores and one
# disk with the tests that time a server's answers: the library and command-line tests against the
# fixture server; the command-line tests that race a running download against a second process, a
# signal or a lowered limit, or sources against each other, and the library's event stream, whose
# moments a test process running six hundred tests at once on two cores delayed by twenty seconds
# (the first download had finished, or had sent no progress event, by then); the live display in
# tmux, which watches the terminal as a person would; a host process whose own tasks keep the queues
# busy on purpose, which loads the process and compares moments; the real servers and proxies, whose
# processes and 64 MiB downloads slowed a fixture server's one-second answer to eight seconds when they
# ran alongside; twenty kills on a capped link, which writes and compares half a gigabyte; the
# simulator, which keeps both cores busy for its run.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build-deps.sh
scripts/test-deps.sh
# At most 32 tests at once in a test process (Swift Testing otherwise starts every test of a run at
# once): with 700 at once, each with its own loopback servers and connections, the process held
# over 1,500 descriptors, and one holding more than about 1,360 crashed spawning a child
# (Foundation's Process reads past the end of its listing of /proc/self/fd once that listing fills
# its buffer). With 32: at most 617, in the same 43 s.
export SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH="${SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH:-32}"
if [ "$#" -gt 0 ]; then
    exec swift test "$@"
fi
# The command-line and library tests whose moments a crowded test process would delay.
timed=(InvariantCLITests LibraryAPITests LinkMemoryCLITests MirrorCLITests)
swift test --skip SimulatorTests --skip ProgressTmuxTests --skip FastpullInteropTests --skip BusyHostTests \
    "${timed[@]/#/--skip=}"
swift test --skip-build "${timed[@]/#/--filter=}"
swift test --skip-build --filter ProgressTmuxTests
swift test --skip-build --filter BusyHostTests
swift test --skip-build --filter FastpullInteropTests --skip KillsOnACappedLinkTests
swift test --skip-build --filter KillsOnACappedLinkTests
exec swift test --skip-build --filter SimulatorTests

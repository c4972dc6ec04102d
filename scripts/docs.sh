#!/usr/bin/env bash
# Builds the library's DocC documentation with the toolchain's own docc (no package plugin): symbol
# graphs from a build in its own scratch folder (the regular build stays as it is), then `docc
# convert` of Sources/Fastpull/Fastpull.docc. Open .build/docs/index.html, or serve the folder:
#   python3 -m http.server -d .build/docs 8000   →   http://localhost:8000/documentation/fastpull
set -euo pipefail
cd "$(dirname "$0")/.."
graphs=.build/docs-symbol-graphs
swift build --scratch-path .build/docs-build --target Fastpull \
    -Xswiftc -emit-symbol-graph -Xswiftc -emit-symbol-graph-dir -Xswiftc "$PWD/$graphs"
docc=$(dirname "$(readlink -f "$(command -v swift)")")/docc
"$docc" convert Sources/Fastpull/Fastpull.docc --additional-symbol-graph-dir "$graphs" \
    --output-path .build/docs --fallback-display-name Fastpull \
    --fallback-bundle-identifier org.fastpull.Fastpull
echo "documentation: $PWD/.build/docs (documentation/fastpull)"

#!/usr/bin/env bash
# Installs what building fastpull needs beyond the Swift toolchain and libssl-dev: SQLite's headers
# (Debian's libsqlite3-dev), for the download manager's list. Quick when they are present.
set -euo pipefail
if [ -f /usr/include/sqlite3.h ]; then exit 0; fi
sudo=""
if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
echo "installing libsqlite3-dev (SQLite's headers, for fastpull's download list)…"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq libsqlite3-dev >/dev/null

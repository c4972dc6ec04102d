#!/usr/bin/env bash
# Installs the servers and peers fastpull-bench compares against, from apt: nginx, aria2 (aria2c), axel,
# wget2, curl, GNU time (/usr/bin/time, for peak RSS) and hyperfine (handy for one-off comparisons).
#
# Idempotent: installs only what is missing, runs `apt-get update` only when the package lists are
# missing or older than a day. A package that cannot be installed is reported and skipped; the
# harness then leaves that tool out of the tables with a note. Always exits 0 unless apt-get is absent.
set -u

packages=(nginx aria2 axel wget2 curl time hyperfine)

if ! command -v apt-get >/dev/null 2>&1; then
    echo "setup.sh: apt-get not found; install these yourself: ${packages[*]}" >&2
    exit 1
fi

as_root=()
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
        as_root=(sudo)
    else
        echo "setup.sh: not root and no sudo; install these yourself: ${packages[*]}" >&2
        exit 1
    fi
fi

installed() {
    dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"
}

missing=()
for package in "${packages[@]}"; do
    installed "$package" || missing+=("$package")
done

if [ "${#missing[@]}" -eq 0 ]; then
    echo "setup.sh: everything is installed (${packages[*]})"
else
    echo "setup.sh: installing ${missing[*]}"
    # Refresh the package lists when there are none, or when they are more than a day old.
    lists=/var/lib/apt/lists
    if [ -z "$(find "$lists" -maxdepth 1 -name '*Packages*' -mtime -1 2>/dev/null | head -n 1)" ]; then
        "${as_root[@]}" apt-get update -q || echo "setup.sh: warning: apt-get update failed; trying anyway" >&2
    fi
    for package in "${missing[@]}"; do
        if DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -q --no-install-recommends \
            "$package"; then
            echo "setup.sh: installed $package"
        else
            echo "setup.sh: warning: could not install $package; fastpull-bench will skip it" >&2
        fi
    done
fi

echo
echo "setup.sh: what fastpull-bench will find:"
for tool in nginx aria2c axel wget2 curl /usr/bin/time hyperfine; do
    if command -v "$tool" >/dev/null 2>&1 || [ -x "/usr/sbin/$tool" ]; then
        case "$tool" in
        nginx) version=$( (nginx -v 2>&1 || /usr/sbin/nginx -v 2>&1) | head -n 1) ;;
        /usr/bin/time) version="GNU time (peak RSS of each run)" ;;
        *) version=$("$tool" --version 2>&1 | head -n 1) ;;
        esac
        echo "  found    $tool: $version"
    else
        echo "  missing  $tool (its rows are skipped, with a note in the report)"
    fi
done
echo
echo "Next: swift build -c release && swift run -c release fastpull-bench --quick"
exit 0

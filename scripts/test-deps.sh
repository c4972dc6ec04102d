#!/usr/bin/env bash
# Installs what the tests need beyond the toolchain: SQLite's headers (libsqlite3-dev), for the
# download manager's list, and what the interoperability tests (Tests/FastpullInteropTests) run
# against: the web servers nginx, lighttpd, apache2 and h2o, the proxies squid, tinyproxy and dante's
# SOCKS5 server (Debian packages), moto's S3 server (PyPI `moto[server]`), aria2p, and Chromium with
# selenium for the daemon's web page, and the shells whose completion the tests drive (zsh, fish).
# Idempotent and quick when everything is present: it runs `apt-get update` and `apt-get install` only
# when a package is missing.
#
# The tests start every server themselves, on loopback, from a configuration they write. A distro
# service started by a package's install script would hold port 80 or 3128 and outlive the run, and in
# a container without systemd it may fail to start and fail the install with it. So, while installing,
# /usr/sbin/policy-rc.d answers 101 ("action forbidden"), which invoke-rc.d and deb-systemd-invoke
# obey; afterwards the previous policy-rc.d (or none) is put back, and any daemon that started anyway
# is stopped by the pid in its pid file.
#
# A server that cannot be installed is a failure (exit 1 with a message), never a skip.
set -euo pipefail

debian_packages=(nginx lighttpd apache2 h2o squid tinyproxy dante-server iproute2 openssl libsqlite3-dev chromium chromium-driver aria2 tmux zsh fish)
# What each package must leave behind for the tests: "package:path".
required_files=(
    nginx:/usr/sbin/nginx
    lighttpd:/usr/sbin/lighttpd
    apache2:/usr/sbin/apache2
    apache2:/usr/lib/apache2/modules/mod_mpm_event.so
    h2o:/usr/bin/h2o
    squid:/usr/sbin/squid
    squid:/usr/lib/squid/basic_ncsa_auth
    tinyproxy:/usr/bin/tinyproxy
    dante-server:/usr/sbin/danted
    iproute2:/usr/sbin/ip
    openssl:/usr/bin/openssl
    libsqlite3-dev:/usr/include/sqlite3.h
    chromium:/usr/bin/chromium
    chromium-driver:/usr/bin/chromedriver
    aria2:/usr/bin/aria2c
    tmux:/usr/bin/tmux
    zsh:/usr/bin/zsh
    fish:/usr/bin/fish
)
# Pid files the Debian packages' services write, with the binary that must own the pid.
service_pid_files=(
    /run/nginx.pid:/usr/sbin/nginx
    /run/lighttpd.pid:/usr/sbin/lighttpd
    /run/apache2/apache2.pid:/usr/sbin/apache2
    /run/h2o.pid:/usr/bin/h2o
    /run/squid.pid:/usr/sbin/squid
    /run/tinyproxy/tinyproxy.pid:/usr/bin/tinyproxy
    /run/danted.pid:/usr/sbin/danted
)

fail() {
    echo "test-deps: $*" >&2
    exit 1
}

as_root() {
    if [ "$(id -u)" -eq 0 ]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        sudo "$@"
    else
        fail "need root (or sudo) to run: $*"
    fi
}

package_installed() {
    [ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null)" = "installed" ]
}

missing_packages() {
    local package
    for package in "${debian_packages[@]}"; do
        package_installed "$package" || echo "$package"
    done
}

# Stops a daemon that an install started despite policy-rc.d, by the pid its pid file names, and only
# when that pid really is the package's binary.
stop_started_services() {
    local entry file binary pid
    for entry in "${service_pid_files[@]}"; do
        file=${entry%%:*}
        binary=${entry#*:}
        [ -s "$file" ] || continue
        pid=$(head -n 1 "$file" | tr -dc '0-9')
        [ -n "$pid" ] || continue
        if [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$binary" ]; then
            echo "test-deps: stopping $binary (pid $pid) that the install started"
            as_root kill -TERM "$pid" 2>/dev/null || true
            for _ in $(seq 50); do
                [ -d "/proc/$pid" ] || break
                sleep 0.1
            done
            [ -d "/proc/$pid" ] && as_root kill -KILL "$pid" 2>/dev/null || true
        fi
    done
}

install_debian_packages() {
    local missing
    mapfile -t missing < <(missing_packages)
    [ "${#missing[@]}" -eq 0 ] && return 0
    command -v apt-get >/dev/null 2>&1 || fail "apt-get not found; install by hand: ${missing[*]}"
    echo "test-deps: installing ${missing[*]}"

    local policy=/usr/sbin/policy-rc.d backup=""
    if [ -e "$policy" ]; then
        backup=$(mktemp /tmp/policy-rc.d.XXXXXX)
        as_root cp -p "$policy" "$backup"
    fi
    restore_policy() {
        if [ -n "$backup" ]; then
            as_root cp -p "$backup" "$policy"
            rm -f "$backup"
        else
            as_root rm -f "$policy"
        fi
    }
    trap restore_policy EXIT
    printf '#!/bin/sh\n# Written by scripts/test-deps.sh while it installs packages.\nexit 101\n' \
        | as_root tee "$policy" >/dev/null
    as_root chmod 755 "$policy"

    local status=0
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq || status=$?
    if [ "$status" -eq 0 ]; then
        as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
            -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold "${missing[@]}" \
            || status=$?
    fi
    restore_policy
    trap - EXIT
    stop_started_services
    [ "$status" -eq 0 ] || fail "apt-get failed (exit $status) installing: ${missing[*]}"
}

check_required_files() {
    local entry package path
    for entry in "${required_files[@]}"; do
        package=${entry%%:*}
        path=${entry#*:}
        [ -e "$path" ] || fail "$path is missing after installing the Debian package $package"
    done
}

moto_importable() {
    python3 - <<'EOF' >/dev/null 2>&1
import moto, moto.server, flask, flask_cors
EOF
}

install_moto() {
    command -v python3 >/dev/null 2>&1 || fail "python3 not found; it runs moto's S3 server"
    moto_importable && return 0
    echo "test-deps: installing moto[server] with pip"
    # A Debian-managed python3 refuses plain `pip install` (PEP 668); fall back to --break-system-packages.
    python3 -m pip install --quiet 'moto[server]' \
        || python3 -m pip install --quiet --break-system-packages 'moto[server]' \
        || fail "pip could not install moto[server]"
    moto_importable || fail "moto[server] is installed but python3 cannot import moto.server"
}

install_debian_packages
check_required_files
install_moto

# aria2p, the aria2 client library and CLI, drives `fastpull daemon` in its interoperability test.
# selenium drives headless Chromium through the daemon's own page in the web page's test.
# install_python_module MODULE [PIP-SPEC]: pip installs PIP-SPEC (default MODULE) unless MODULE imports.
install_python_module() {
    local spec=${2:-$1}
    python3 -c "import $1" >/dev/null 2>&1 && return 0
    echo "test-deps: installing $spec with pip"
    python3 -m pip install --quiet "$spec" \
        || python3 -m pip install --quiet --break-system-packages "$spec" \
        || fail "pip could not install $spec"
    python3 -c "import $1" >/dev/null 2>&1 || fail "$spec is installed but python3 cannot import $1"
}
install_python_module aria2p
# aria2p's terminal interface (`aria2p top`), shown in tmux by its test.
install_python_module asciimatics 'aria2p[tui]'
install_python_module selenium
echo "test-deps: nginx, lighttpd, apache2, h2o, squid, tinyproxy, dante, chromium, moto[server], aria2p and selenium are present"

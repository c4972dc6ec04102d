#!/bin/sh
# Regenerates the test certificates used by FastpullFixtures (the loopback HTTPS fixture server).
#
#   ca.pem / ca.key                "Fastpull Test CA" (self-signed). Reused when present so that
#                                  certificates can be added later; pass --new-ca to replace it.
#   server.pem / server.key        SAN DNS:localhost, IP:127.0.0.1, IP:::1
#   wronghost.pem / wronghost.key  SAN DNS:wrong.example only
#   expired.pem / expired.key      SAN like server.pem, valid 2020-01-01 .. 2021-01-01 only
#   client.pem / client.key        "Fastpull Test Client", for clientAuth: a client certificate
#                                  (`--cert`/`--key`) the fixture server can require
#
# Everything else is valid from 2020-01-01 for 100 years (backdated so that a machine whose clock is a
# little behind still accepts them). Needs only the openssl command line tool, 3.0 or later: `openssl ca`
# is the 3.0 command that accepts explicit validity dates. Keys are EC P-256 and unencrypted: these
# certificates are for loopback tests and must never be trusted anywhere else.
set -eu

cd "$(dirname "$0")"
START=20200101000000Z
END=21200101000000Z
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

mkdir -p "$work/db"
: > "$work/db/index.txt"
cat > "$work/ca.cnf" <<CNF
[ca]
default_ca = fixture
[fixture]
database = $work/db/index.txt
new_certs_dir = $work/db
serial = $work/db/serial
default_md = sha256
policy = anything
copy_extensions = none
unique_subject = no
[anything]
organizationName = optional
commonName = supplied
CNF

# sign CSR OUT START END EXTFILE [-selfsign]
sign() {
    openssl rand -hex 16 > "$work/db/serial"
    openssl ca -batch -notext -config "$work/ca.cnf" -keyfile ca.key -in "$1" -out "$2" \
        -startdate "$3" -enddate "$4" -extfile "$5" ${6:+"$6"} ${7:+"$7"} 2>"$work/ca.log" \
        || { cat "$work/ca.log" >&2; exit 1; }
}

if [ "${1:-}" = "--new-ca" ] || [ ! -f ca.pem ] || [ ! -f ca.key ]; then
    cat > "$work/ca.ext" <<EXT
basicConstraints=critical,CA:TRUE
keyUsage=critical,keyCertSign,cRLSign
subjectKeyIdentifier=hash
EXT
    openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
        -keyout ca.key -out "$work/ca.csr" -subj "/O=Fastpull/CN=Fastpull Test CA" 2>/dev/null
    sign "$work/ca.csr" ca.pem "$START" "$END" "$work/ca.ext" -selfsign
fi

# leaf NAME CN SAN START END [EXTENDED-KEY-USAGE]
leaf() {
    cat > "$work/$1.ext" <<EXT
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=${6:-serverAuth}
subjectAltName=$3
subjectKeyIdentifier=hash
authorityKeyIdentifier=keyid
EXT
    openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
        -keyout "$1.key" -out "$work/$1.csr" -subj "/O=Fastpull/CN=$2" 2>/dev/null
    sign "$work/$1.csr" "$1.pem" "$4" "$5" "$work/$1.ext" -cert ca.pem
}

leaf server localhost "DNS:localhost,IP:127.0.0.1,IP:::1" "$START" "$END"
leaf wronghost wrong.example "DNS:wrong.example" "$START" "$END"
leaf expired localhost "DNS:localhost,IP:127.0.0.1,IP:::1" 20200101000000Z 20210101000000Z
leaf client "Fastpull Test Client" "DNS:client.example" "$START" "$END" clientAuth
chmod 644 ca.key ca.pem server.key server.pem wronghost.key wronghost.pem expired.key expired.pem \
    client.key client.pem

openssl verify -CAfile ca.pem server.pem wronghost.pem client.pem >/dev/null
echo "certificates written to $(pwd)"

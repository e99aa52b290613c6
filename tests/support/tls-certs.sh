#!/usr/bin/env bash
# tls-certs.sh DIR - makes the certificates of the TLS tests in DIR, with the
# openssl command (P-256 keys: quick to make):
#   ca.crt, ca.key               the test CA, which the nodes' certificates come from
#   server.crt, server.key       a node's: for localhost and 127.0.0.1, valid now
#   expired.crt                  the same key and names, valid only in January 2020
#   other-ca.crt                 another CA, which issued none of these (a wrong trust)
#   client.crt, client.key       a client's, from the test CA (for tls-auth-clients yes)
# Nothing is made again when DIR/done exists.
set -euo pipefail
dir=${1:?usage: tls-certs.sh DIR}
mkdir -p "$dir"
cd "$dir"
[ -f done ] && exit 0

key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
ca() {
  key "$1.key"
  openssl req -x509 -new -key "$1.key" -out "$1.crt" -days 3650 -subj "/CN=$2" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign" 2>/dev/null
}

ca ca "redlock test CA"
ca other-ca "redlock other CA"
rm -f other-ca.key

# A CA database for `openssl ca`, the one command that signs with any dates.
mkdir -p issued
: > index.txt
echo 1000 > serial
cat > ca.cnf <<CNF
[ca]
default_ca = test
[test]
database = index.txt
new_certs_dir = issued
serial = serial
default_md = sha256
policy = any
unique_subject = no
[any]
commonName = supplied
[server]
basicConstraints = CA:FALSE
subjectAltName = DNS:localhost,IP:127.0.0.1
extendedKeyUsage = serverAuth
[client]
basicConstraints = CA:FALSE
extendedKeyUsage = clientAuth
CNF

# issue NAME CN EXTENSIONS [openssl ca date options...]
issue() {
  local name=$1 cn=$2 ext=$3
  shift 3
  openssl req -new -key "$name.key" -out "$name.csr" -subj "/CN=$cn" 2>/dev/null
  openssl ca -batch -notext -config ca.cnf -cert ca.crt -keyfile ca.key -extensions "$ext" \
    -in "$name.csr" -out "$name.crt" "$@" 2>/dev/null
}

key server.key
issue server localhost server -days 3650
# The same key and names, expired long ago.
cp server.csr expired.csr
openssl ca -batch -notext -config ca.cnf -cert ca.crt -keyfile ca.key -extensions server \
  -in expired.csr -out expired.crt -startdate 20200101000000Z -enddate 20200201000000Z 2>/dev/null
key client.key
issue client "redlock test client" client -days 3650
chmod 644 ./*.key
touch done

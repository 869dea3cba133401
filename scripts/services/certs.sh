# Shared by the service scripts: a test CA with a server and a client certificate, made with
# openssl. Source this file, then: gen_certs DIR CLIENT_CN LOGFILE.
#
# CA, server cert (SAN IP:127.0.0.1, DNS:localhost) and client cert (CN CLIENT_CN), RSA 2048
# (keys unencrypted PKCS#8), 10 years. Generated once; all of them again when any file is missing.
gen_certs() {
  local CERTS="$1" CLIENT_CN="$2" OUT="$3" f ok=1
  for f in ca.key ca.crt server.key server.crt client.key client.crt; do
    [[ -s "$CERTS/$f" ]] || ok=0
  done
  ((ok)) && return 0
  rm -rf "$CERTS"
  mkdir -p "$CERTS"
  chmod 700 "$CERTS"
  cat >"$CERTS/openssl.cnf" <<'CNF'
[req]
distinguished_name = dn
prompt = no
[dn]
CN = ferry test CA
[ca]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid:always
[server]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1,DNS:localhost
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid,issuer
[client]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = clientAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid,issuer
CNF
  # (set -e does not apply inside a subshell run as the left side of ||: every step checks itself.)
  (
    cd "$CERTS" || exit 1
    openssl req -x509 -config openssl.cnf -extensions ca -newkey rsa:2048 -nodes -sha256 \
        -days 3650 -subj "/CN=ferry test CA" -keyout ca.key -out ca.crt || exit 1
    for role in server client; do
      if [[ $role == server ]]; then cn=localhost; else cn=$CLIENT_CN; fi
      openssl req -new -config openssl.cnf -newkey rsa:2048 -nodes -sha256 -subj "/CN=$cn" \
          -keyout "$role.key" -out "$role.csr" || exit 1
      openssl x509 -req -in "$role.csr" -CA ca.crt -CAkey ca.key \
          -set_serial "0x$(openssl rand -hex 16)" -days 3650 -sha256 \
          -extfile openssl.cnf -extensions "$role" -out "$role.crt" || exit 1
      rm -f "$role.csr"
    done
    chmod 600 ./*.key
  ) >>"$OUT" 2>&1 || {
    echo "openssl failed (see $OUT)" >&2
    rm -rf "$CERTS"
    return 1
  }
  log "generated CA, server and client certificates in $CERTS"
}

# Sourced by tests: a certificate authority made with the openssl command,
# the way an operator with an existing PKI would, issuing node certificates
# and CRLs (`openssl ca`, `openssl ca -revoke`, `openssl ca -gencrl`).
#
#   ca_init DIR ORG          a CA (CN "test CA", O ORG) in DIR: ca.pem, ca.key
#   ca_issue DIR NAME ORG    DIR/NAME.pem and DIR/NAME.key (CN NAME, clientAuth)
#   ca_revoke DIR NAME       marks NAME revoked in the CA's database
#   ca_crl DIR OUT [openssl ca options...]   writes a PEM CRL to OUT atomically
ca_init() {
  local d=$1 org=$2
  mkdir -p "$d/newcerts"
  : >"$d/index.txt"
  echo 1000 >"$d/serial"
  echo 01 >"$d/crlnumber"
  cat >"$d/ca.cnf" <<CNF
[ca]
default_ca = test_ca
[test_ca]
dir = $d
database = $d/index.txt
new_certs_dir = $d/newcerts
serial = $d/serial
crlnumber = $d/crlnumber
certificate = $d/ca.pem
private_key = $d/ca.key
default_md = sha256
default_days = 30
default_crl_days = 7
policy = any
unique_subject = no
copy_extensions = none
[any]
organizationName = supplied
commonName = supplied
[node]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = clientAuth
[v3_ca]
basicConstraints = critical,CA:TRUE,pathlen:0
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
CNF
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$d/ca.key" -out "$d/ca.pem" \
    -days 30 -subj "/O=$org/CN=test CA" -config "$d/ca.cnf" -extensions v3_ca 2>/dev/null
  chmod 600 "$d/ca.key"
}
ca_issue() {
  local d=$1 name=$2 org=$3
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$d/$name.key" \
    -subj "/O=$org/CN=$name" -out "$d/$name.csr" 2>/dev/null
  openssl ca -batch -config "$d/ca.cnf" -extensions node -in "$d/$name.csr" -out "$d/$name.pem" -notext 2>/dev/null
}
ca_revoke() { openssl ca -batch -config "$1/ca.cnf" -revoke "$1/$2.pem" 2>/dev/null; }
ca_crl() {
  local d=$1 out=$2
  shift 2
  openssl ca -batch -config "$d/ca.cnf" -gencrl -out "$out.new" "$@" 2>/dev/null && mv "$out.new" "$out"
}

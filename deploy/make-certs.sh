#!/usr/bin/env bash
# Makes the serving certificate of the aggregated overlay in deploy/aggregated/certs/: a CA (ca.crt, whose bundle
# the APIServices carry) and a certificate for the Service's DNS names signed by it (tls.crt, tls.key), with
# openssl. Keep ca.key somewhere safe to renew the certificate, or bring your own (cert-manager's, say) instead.
#
# Usage: deploy/make-certs.sh [NAMESPACE]   (default: wasm-apiserver)
set -euo pipefail
namespace="${1:-wasm-apiserver}"
dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/aggregated/certs"
mkdir -p "$dir"
cd "$dir"
openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=wasm-apiserver-ca" \
    -keyout ca.key -out ca.crt 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj "/CN=wasm-apiserver.$namespace.svc" \
    -keyout tls.key -out tls.csr 2>/dev/null
printf 'subjectAltName=DNS:wasm-apiserver.%s.svc,DNS:wasm-apiserver.%s.svc.cluster.local\nextendedKeyUsage=serverAuth\n' \
    "$namespace" "$namespace" > ext.cnf
openssl x509 -req -in tls.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 825 -extfile ext.cnf \
    -out tls.crt 2>/dev/null
rm -f tls.csr ext.cnf ca.srl
echo "wrote $dir/{ca.crt,tls.crt,tls.key} (and ca.key: keep it out of the cluster)"

#!/bin/bash
# The compose stack's certificates and credentials, made once into
# /pki (deploy/compose/.state/pki on the host): one directory per
# component holding only what that component needs. Only the
# controller-manager's directory holds the cluster CA's key (it signs
# CSRs); each etcd member holds the etcd CA's key (a member makes its own
# certificates); nothing else holds a CA key.
set -euo pipefail
P=/pki
C=$P/cluster
if [ -f "$P/.done" ]; then
  echo "certs: already made"
  exit 0
fi
rm -rf "${P:?}"/*
LB=172.28.0.30
APISERVER_HOSTS=localhost,127.0.0.1,lb,apiserver-0,apiserver-1,$LB,172.28.0.31,172.28.0.32
NATS_URLS=nats://nats-0:4222,nats://nats-1:4222,nats://nats-2:4222

kubebus certs --pki-dir "$C" --hosts "$APISERVER_HOSTS" >/dev/null
kubebus certs etcd --pki-dir "$C" >/dev/null

for i in 0 1 2; do
  mkdir -p "$P/etcd-$i/etcd"
  cp "$C/etcd/ca.crt" "$C/etcd/ca.key" "$P/etcd-$i/etcd/"
  kubebus certs serving --pki-dir "$C" --name "nats-$i" --hosts "nats-$i,172.28.0.2$((i + 1)),localhost,127.0.0.1" >/dev/null
  mkdir -p "$P/nats-$i"
  cp "$C/ca.crt" "$C/serving-nats-$i.crt" "$C/serving-nats-$i.key" "$P/nats-$i/"
  kubebus certs client --pki-dir "$C" --user system:kubebus:nats-route --out "$P/nats-$i/route" >/dev/null
done

# Both API servers share the serving certificate, the ServiceAccount
# signing key and the encryption key; neither gets a CA key.
key=$(head -c 32 /dev/urandom | base64)
for i in 0 1; do
  d=$P/apiserver-$i
  mkdir -p "$d/etcd"
  (cd "$C" && cp ./*.crt ./*.key "$d/") && rm -f "$d/ca.key"
  cp "$C/etcd/ca.crt" "$d/etcd/"
  cat > "$d/encryption-config.yaml" <<YAML
apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets]
  providers:
  - aescbc:
      keys:
      - name: compose
        secret: $key
  - identity: {}
YAML
done

server=https://$LB:6443
kc() { # user dir file [group]
  mkdir -p "$P/$2"
  if [ -n "${4:-}" ]; then
    kubebus certs kubeconfig --pki-dir "$C" --user "$1" --group "$4" --server "$server" --out "$P/$2/$3" >/dev/null
  else
    kubebus certs kubeconfig --pki-dir "$C" --user "$1" --server "$server" --out "$P/$2/$3" >/dev/null
  fi
}
for i in 0 1; do
  kc system:kube-controller-manager "kcm-$i" kubeconfig
  cp "$C/ca.crt" "$C/ca.key" "$P/kcm-$i/"
  kc system:kube-scheduler "scheduler-$i" kubeconfig
  kc "system:node:node-$i" "node-$i" kubelet.kubeconfig system:nodes
  kc system:kube-proxy "node-$i" proxy.kubeconfig
  kc system:kube-dns "node-$i" dns.kubeconfig
  cp "$C/ca.crt" "$P/node-$i/"
done
# The admin's kubeconfig, for the host: the load balancer's published port.
kubebus certs kubeconfig --pki-dir "$C" --user kubernetes-admin --group system:masters \
  --server "https://127.0.0.1:${KUBEBUS_COMPOSE_PORT:-16443}" --out "$P/admin.kubeconfig" >/dev/null
echo "$NATS_URLS" > "$P/nats-urls"
touch "$P/.done"
echo "certs: made in $P"

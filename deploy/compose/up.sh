#!/usr/bin/env bash
# make compose-up: build the images when their inputs changed, start the
# stack, wait until both nodes are Ready, and write deploy/compose/kubeconfig
# (the admin's, through the load balancer's port on 127.0.0.1).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
start=$(date +%s)
bash ./build-images.sh
compose() { docker-compose -p "${KUBEBUS_COMPOSE_PROJECT:-kubebus}" "$@"; }
compose up -d 2>&1 | grep -v -e DEPRECATED -e buildx -e 'docs.docker.com' || true
cp .state/pki/admin.kubeconfig kubeconfig
chmod 600 kubeconfig
kubectl=${KUBECTL:-kubectl}
deadline=$((start + ${KUBEBUS_COMPOSE_TIMEOUT:-300}))
until [ "$("$kubectl" --kubeconfig kubeconfig get nodes --no-headers 2>/dev/null | awk '$2 == "Ready"' | wc -l)" -ge 2 ]; do
  if [ "$(date +%s)" -gt "$deadline" ]; then
    echo "compose-up: the nodes are not both Ready" >&2
    compose ps >&2
    exit 1
  fi
  sleep 1
done
"$kubectl" --kubeconfig kubeconfig get nodes -o wide
echo "compose-up: two Ready nodes after $(($(date +%s) - start))s; kubeconfig: $here/kubeconfig"

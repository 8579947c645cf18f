#!/usr/bin/env bash
# Import image tarballs (docker save / OCI archives) into the containerd of
# every node of the stack, so pods can use them without a registry:
#   deploy/compose/import-image.sh busybox.tar [more.tar ...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
project=${KUBEBUS_COMPOSE_PROJECT:-kubebus}
[ $# -gt 0 ] || { echo "usage: $0 IMAGE.tar..." >&2; exit 2; }
for c in $(docker ps --filter "label=com.docker.compose.project=$project" --filter "label=com.docker.compose.service" --format '{{.Names}}' | grep -E '_node-[0-9]+_'); do
  for tar in "$@"; do
    docker exec -i "$c" sh -c 'f=/var/lib/kubebus/import-$$.tar; cat > "$f" && kubebus image import --root-dir /var/lib/kubebus/kubelet "$f"; rc=$?; rm -f "$f"; exit $rc' < "$tar"
  done
done

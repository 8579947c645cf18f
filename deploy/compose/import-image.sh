#!/usr/bin/env bash
# Import image tarballs (docker save / OCI archives) into the containerd of
# every node of the stack, so pods can use them without a registry:
#   deploy/compose/import-image.sh busybox.tar [more.tar ...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
project=${KUBEBUS_COMPOSE_PROJECT:-kubebus}
[ $# -gt 0 ] || { echo "usage: $0 IMAGE.tar..." >&2; exit 2; }
# The nodes' containers by their compose labels (docker-compose 1.x names
# them project_node-0_1, docker compose v2 project-node-0-1).
nodes=$(docker ps --filter "label=com.docker.compose.project=$project" --format '{{.Label "com.docker.compose.service"}} {{.Names}}' | awk '$1 ~ /^node-[0-9]+$/ {print $2}')
[ -n "$nodes" ] || { echo "import-image: no running node of project $project" >&2; exit 1; }
for c in $nodes; do
  for tar in "$@"; do
    docker exec -i "$c" sh -c 'f=/var/lib/kubebus/import-$$.tar; cat > "$f" && kubebus image import --root-dir /var/lib/kubebus/kubelet "$f"; rc=$?; rm -f "$f"; exit $rc' < "$tar"
  done
done

#!/usr/bin/env bash
# make compose-down: stop the stack and remove its containers, network,
# volumes and certificates.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
docker-compose -p "${KUBEBUS_COMPOSE_PROJECT:-kubebus}" down -v --remove-orphans 2>&1 | grep -v -e DEPRECATED -e buildx -e 'docs.docker.com' || true
rm -rf .state kubeconfig

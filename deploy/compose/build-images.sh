#!/usr/bin/env bash
# Build the compose stack's images here, pulling nothing (no registry is
# reachable): the control-plane image FROM scratch with the static
# kubebus binary, and the node image from a Debian root filesystem made
# with debootstrap from the Debian mirror apt already uses, plus the same
# binary. `make compose-images` runs this; an image whose inputs have not
# changed is not rebuilt.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
bin=${BIN:-$root/bin}
work=${KUBEBUS_COMPOSE_CACHE:-/var/cache/kubebus-compose}
suite=bookworm
packages=containerd,runc,containernetworking-plugins,iptables,nftables,iproute2,haproxy,ca-certificates,procps

# The Debian mirror apt uses (deb822 .sources or a classic list).
mirror() {
  local uri
  uri=$(grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | grep -v security | head -1 | awk '{print $2}')
  if [ -z "$uri" ]; then
    uri=$(grep -hs '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list | grep -v security | head -1 | awk '{print $2}')
  fi
  echo "${uri:-http://deb.debian.org/debian}"
}

if ! command -v debootstrap >/dev/null; then
  echo "build-images: installing debootstrap"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
fi

for b in kubebus kubebus-pause; do
  [ -x "$bin/$b" ] || { echo "build-images: $bin/$b missing: run make build first" >&2; exit 1; }
done

ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
cp "$bin/kubebus" "$bin/kubebus-pause" "$ctx/"
sum=$(cat "$bin/kubebus" "$bin/kubebus-pause" | sha256sum | cut -c1-12)

# Control plane: the binary alone.
if ! docker image inspect "kubebus/control:$sum" >/dev/null 2>&1; then
  cat > "$ctx/Dockerfile.control" <<'DOCKERFILE'
FROM scratch
COPY kubebus /kubebus
ENTRYPOINT ["/kubebus"]
DOCKERFILE
  docker build -q -f "$ctx/Dockerfile.control" -t "kubebus/control:$sum" "$ctx" >/dev/null
fi
docker tag "kubebus/control:$sum" kubebus/control:dev

# Node base: Debian minbase with containerd, runc, the CNI plugins and
# nftables, imported once per package list.
base="kubebus/node-base:$(echo "$suite $packages" | sha256sum | cut -c1-12)"
if ! docker image inspect "$base" >/dev/null 2>&1; then
  rootfs="$work/rootfs-$suite"
  rm -rf "$rootfs"
  mkdir -p "$work"
  echo "build-images: debootstrap $suite into $rootfs (about a minute)"
  debootstrap --variant=minbase --include="$packages" "$suite" "$rootfs" "$(mirror)" >"$work/debootstrap.log" 2>&1 ||
    { tail -20 "$work/debootstrap.log" >&2; exit 1; }
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  tar -C "$rootfs" -c . | docker import - "$base" >/dev/null
  rm -rf "$rootfs"
fi

# Node: the base plus the binaries.
if ! docker image inspect "kubebus/node:$sum" >/dev/null 2>&1; then
  cat > "$ctx/Dockerfile.node" <<DOCKERFILE
FROM $base
COPY kubebus kubebus-pause /usr/local/bin/
ENTRYPOINT ["/usr/local/bin/kubebus"]
DOCKERFILE
  docker build -q -f "$ctx/Dockerfile.node" -t "kubebus/node:$sum" "$ctx" >/dev/null
fi
docker tag "kubebus/node:$sum" kubebus/node:dev
echo "build-images: kubebus/control:dev and kubebus/node:dev ($sum)"

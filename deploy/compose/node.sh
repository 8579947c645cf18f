#!/bin/bash
# A node of the compose stack: the kubelet (with its own containerd,
# runc and the CNI plugins), the proxy (nftables) and the cluster DNS,
# each a kubebus process with its own identity. The first to exit ends
# the container, so compose restarts the node whole.
set -euo pipefail
name=$1
ip=$2
nats=nats://nats-0:4222,nats://nats-1:4222,nats://nats-2:4222
mkdir -p /var/lib/kubebus/kubelet

# /proc/sys and /sys are read-only in a container that is not
# privileged; the CNI plugins and the proxy write them.
mount -o remount,rw /proc/sys 2>/dev/null || mount -t proc proc /proc
mount -o remount,rw /sys

# Docker gives the container its cgroups read-only (cgroup v1): mount
# each hierarchy afresh and bind the container's own subtree over it, so
# the node's containerd nests its pods' cgroups inside the node's, as on
# a machine of its own.
if [ ! -d /sys/fs/cgroup/unified ] && [ ! -f /sys/fs/cgroup/cgroup.controllers ]; then
  for d in /sys/fs/cgroup/*/; do
    ctrl=$(basename "$d")
    [ -L "${d%/}" ] && continue
    opts=$ctrl
    [ "$ctrl" = systemd ] && opts=none,name=systemd
    self=$(awk -F: -v c="$ctrl" '{ n = split($2, a, ","); for (i = 1; i <= n; i++) if (a[i] == c || a[i] == "name=" c) print $3 }' /proc/self/cgroup | head -1)
    mkdir -p "/run/cgroup-root/$ctrl"
    mount -t cgroup -o "$opts" cgroup "/run/cgroup-root/$ctrl"
    umount "$d"
    mount --bind "/run/cgroup-root/$ctrl$self" "$d"
  done
fi

kubebus kubelet --hostname-override "$name" --node-ip "$ip" --address 0.0.0.0 \
  --kubeconfig /pki/kubelet.kubeconfig --client-ca-file /pki/ca.crt --nats-url "$nats" \
  --root-dir /var/lib/kubebus/kubelet --cluster-dns 10.96.0.10 &
kubebus proxy --hostname-override "$name" --kubeconfig /pki/proxy.kubeconfig --nats-url "$nats" \
  --record-programmed --pod-routes --metrics-bind-address "" &
# The cluster DNS answers on the node's address; names outside the
# cluster go to a loopback port where nothing answers, so no pod's lookup
# leaves the stack.
kubebus dns --hostname-override "$name" --kubeconfig /pki/dns.kubeconfig --nats-url "$nats" \
  --listen "$ip:53" --advertise-address "$ip" --upstream 127.0.0.1:9 &
wait -n
echo "node.sh: a process of $name exited; stopping the node" >&2
exit 1

#!/usr/bin/env bash
# Installs what kubebus's tests need when it is missing. Idempotent; quiet when
# everything is present. Debian packages through apt; kubectl, when absent,
# is built from the k8s.io/kubectl module through the Go module proxy.
set -euo pipefail

need_apt=()
command -v containerd >/dev/null || need_apt+=(containerd)
command -v runc >/dev/null || need_apt+=(runc)
command -v nft >/dev/null || need_apt+=(nftables)
command -v ip >/dev/null || need_apt+=(iproute2)
[ -x /usr/lib/cni/bridge ] || [ -x /opt/cni/bin/bridge ] || need_apt+=(containernetworking-plugins)
# The runtime tests build a busybox image from the host's static busybox.
[ -x /bin/busybox ] && { ldd /bin/busybox 2>&1 || true; } | grep -q 'not a dynamic executable' || need_apt+=(busybox-static)
# The CNI portmap and firewall plugins program iptables.
command -v iptables >/dev/null || need_apt+=(iptables)
# The client suites: the official Python client (Debian's /usr/bin/python3
# imports it; a pyenv python on PATH would not) and curl.
/usr/bin/python3 -c 'import kubernetes' >/dev/null 2>&1 || need_apt+=(python3-kubernetes)
[ -x /usr/bin/curl ] || need_apt+=(curl)

if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "install-deps: missing ${need_apt[*]} and not root; install them and retry" >&2
    exit 1
  fi
  echo "install-deps: installing ${need_apt[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

if ! command -v kubectl >/dev/null; then
  here=$(cd "$(dirname "$0")" && pwd)
  echo "install-deps: kubectl not on PATH; building it from k8s.io/kubectl into $here/../bin"
  v=v1.37.2 # the k8s.io/kubectl module version in hack/kubectl/go.mod
  ld="-X k8s.io/component-base/version.gitVersion=$v -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37"
  ld="$ld -X k8s.io/client-go/pkg/version.gitVersion=$v -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=37"
  (cd "$here/kubectl" && CGO_ENABLED=0 go build -ldflags "$ld" -o "$here/../bin/kubectl" .)
fi

# Helm for the chart tests (test/e2e/helm_test.go, test/helm/): Helm 3 as
# helm and Helm 4 as helm4. Either one on PATH is used as it is; otherwise it is
# built from its pinned module (hack/helm, hack/helm4) into bin/, and rebuilt
# only when bin/ holds another version. The go build cache keeps a rebuild to
# the link step (a cold build of both takes a few minutes on 2 cores).
hack=$(cd "$(dirname "$0")" && pwd)
helm_version() { "$1" version --template '{{.Version}}' 2>/dev/null || true; }
build_helm() { # build_helm MODULE_DIR TOOL_PACKAGE OUTPUT VERSION LDFLAGS
  echo "install-deps: building Helm $4 from $2 into $3"
  (cd "$hack/$1" && CGO_ENABLED=0 go build -ldflags "-s -w $5" -o "$3" "$2")
}

v=v3.22.0 # the helm.sh/helm/v3 module version in hack/helm/go.mod
out=$hack/../bin/helm
if ! { command -v helm >/dev/null && [[ $(helm_version helm) == v3.* ]]; } && [ "$(helm_version "$out")" != "$v" ]; then
  # chartutil's and lint's default Kubernetes version: the client-go minor, as Helm's Makefile sets it.
  p=helm.sh/helm/v3
  build_helm helm $p/cmd/helm "$out" $v "-X $p/internal/version.version=$v \
    -X $p/pkg/chartutil.k8sVersionMajor=1 -X $p/pkg/chartutil.k8sVersionMinor=37 \
    -X $p/pkg/lint/rules.k8sVersionMajor=1 -X $p/pkg/lint/rules.k8sVersionMinor=37"
fi

v=v4.3.1 # the helm.sh/helm/v4 module version in hack/helm4/go.mod
out=$hack/../bin/helm4
if ! { command -v helm4 >/dev/null || { command -v helm >/dev/null && [[ $(helm_version helm) == v4.* ]]; }; } &&
  [ "$(helm_version "$out")" != "$v" ]; then
  build_helm helm4 helm.sh/helm/v4/cmd/helm "$out" $v "-X helm.sh/helm/v4/internal/version.version=$v"
fi

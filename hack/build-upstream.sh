#!/usr/bin/env bash
# Builds pinned upstream Kubernetes binaries (only used as black boxes by the
# compatibility check and the test bed) from the Go module proxy into
# .cache/upstream/<version>/. A binary that is already there is not rebuilt.
#
# usage: hack/build-upstream.sh [binary...]   (default: kubeadm)
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-v1.36.3}"
STAGING_VERSION="v0.${K8S_VERSION#v1.}"
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$root/.cache/upstream/$K8S_VERSION"
wrap="$root/.cache/upstream/wrapper-$K8S_VERSION"
mkdir -p "$out" "$wrap"

binaries=("$@")
[ ${#binaries[@]} -gt 0 ] || binaries=(kubeadm)

staging=(api apiextensions-apiserver apimachinery apiserver cli-runtime client-go
  cloud-provider cluster-bootstrap code-generator component-base component-helpers
  controller-manager cri-api cri-client cri-streaming csi-translation-lib
  dynamic-resource-allocation endpointslice externaljwt kms kube-aggregator
  kube-controller-manager kube-proxy kube-scheduler kubectl kubelet metrics
  mount-utils pod-security-admission sample-apiserver sample-controller streaming)

if [ ! -f "$wrap/go.mod" ]; then
  {
    echo "module upstreamwrapper"
    echo
    echo "go 1.26"
    echo
    echo "require k8s.io/kubernetes $K8S_VERSION"
    echo
    for m in "${staging[@]}"; do echo "replace k8s.io/$m => k8s.io/$m $STAGING_VERSION"; done
  } > "$wrap/go.mod.tmp"
  mv "$wrap/go.mod.tmp" "$wrap/go.mod"
fi

commit="$(printf '%s' "$K8S_VERSION" | sha1sum | cut -c1-40)"
minor="${K8S_VERSION#v1.}"; minor="${minor%%.*}"
ldflags=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
  ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.gitCommit=$commit -X $pkg.buildDate=2026-01-01T00:00:00Z"
done

cd "$wrap"
for b in "${binaries[@]}"; do
  if [ -x "$out/$b" ]; then continue; fi
  case "$b" in
    kubectl) pkg=k8s.io/kubernetes/cmd/kubectl ;;
    *) pkg=k8s.io/kubernetes/cmd/$b ;;
  esac
  echo "building upstream $b $K8S_VERSION (slow the first time)..." >&2
  CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -tags selinux,notest,grpcnotrace \
    -ldflags "$ldflags" -o "$out/.$b.tmp" "$pkg"
  mv "$out/.$b.tmp" "$out/$b"
done

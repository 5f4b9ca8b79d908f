#!/bin/sh
# Makes manifests.yaml: LeaderWorkerSet's release manifests for the version pinned in
# lws.go, from the sigs.k8s.io/lws module (testkit/kubetest/lwstools pins the same
# version) built with kubectl's kustomize, the controller image set to the release's.
# Run from this directory: sh gen.sh (needs kubectl; `make test-tools` caches one).
set -eu
v=$(sed -n 's/^const Version = "\(.*\)"/\1/p' lws.go)
mod=$(cd ../../testkit/kubetest/lwstools && GOWORK=off GOFLAGS=-mod=mod go list -m -f '{{.Dir}}' sigs.k8s.io/lws)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$mod/config" "$tmp/config"
chmod -R u+w "$tmp"
kubectl=${KUBECTL:-$(ls "$HOME"/.cache/kinetic-tools/kube-*/kubectl 2>/dev/null | tail -1)}
"$kubectl" kustomize "$tmp/config/default" |
	sed "s#us-central1-docker.pkg.dev/k8s-staging-images/lws/lws:main#registry.k8s.io/lws/lws:$v#" >manifests.yaml
grep -q "registry.k8s.io/lws/lws:$v" manifests.yaml

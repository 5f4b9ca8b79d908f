//go:build tools

// Package tools pins the Kubernetes, etcd, kwok and LeaderWorkerSet commands that the test
// cluster runs. It is its own module so that the product never depends on
// k8s.io/kubernetes.
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
	_ "sigs.k8s.io/kwok/cmd/kwok"
	_ "sigs.k8s.io/lws/cmd"
)

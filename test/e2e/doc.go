// Package e2e runs a single-master kubeadm v1.17.3 control plane the way a master runs it
// (test/kubeadmnode): a real kubelet v1.17.3 starts kubeadm's static pods (etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler) in Docker, from images this pipeline built, and the
// test drives docs/operations.md's upgrade procedure through it: a failed apply, then its three
// blocks pasted as they are (before, apply, and rollback once per apply), with a planned restart
// of each patched component in between.
//
// The master's filesystem is _output/e2e/root; its container runtime is a private dockerd whose
// sockets live in /run/idc-lts-e2e. The machine's own Docker daemon is never touched. Both paths
// are fixed, so a run killed halfway is cleaned up by the next one.
package e2e

// Package haupgrade runs the operator's rolling upgrade (docs/operations.md) on three kubeadm
// masters with stacked etcd behind a load balancer, each master in a network namespace, UTS
// namespace, run directory and cgroup of its own, on a switch that leads nowhere else (issue
// #48). make test-ha-cluster brings the cluster up and checks it.
package haupgrade

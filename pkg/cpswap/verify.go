package cpswap

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	neturl "net/url"
	"strconv"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
)

// StartMargin is the least time --timeout must leave beyond --soak: the kubelet notices a changed
// manifest within its 20 s file check period, then the component starts and must lead or stand
// by before the soak begins; with less, an apply could never verify.
const StartMargin = 30 * time.Second

// ComponentVerifier proves that the kubelet restarted a component from the new manifest and that
// it works:
//  1. a process of that name runs that did not run before the manifest changed (PID and start
//     tick, see process.go);
//  2. its health endpoint (the liveness probe's) answers 200;
//  3. the leader Lease is renewed after the change, and not by the identity that held it before
//     when that was this host's old instance (it renews until the kubelet stops it). A renewal by
//     another master's instance means this one stands by; the summary says which. A component
//     that elects no leader (kube-apiserver: LeaseName empty) skips this step;
//  4. when the image is pinned by digest (ImageDigest), the kubelet reports that image for the
//     container in the mirror pod's status (its image ID, docker-pullable://REPO@DIGEST, is the
//     digest the runtime pulled), so a node that runs something else under that name fails;
//  5. for Soak, the same process keeps running and keeps answering 200 (a crash loop fails here).
//
// Every request is bounded by the context: an apiserver that accepts and never answers cannot
// hold the apply past its timeout.
type ComponentVerifier struct {
	Procs Processes
	Comm  string // process name
	// Args, if not nil, are the new manifest's flags: a new process counts only if its command
	// line ends with them (an old container restarted meanwhile does not count). OldArgs, if not
	// nil, are the old manifest's: only processes whose command line ends with them are the old
	// instance the kubelet must stop (another process of that name on the host, a test run or a
	// second copy, is none of cpswap's business).
	Args, OldArgs []string
	HealthURL     string
	// Leases reads coordination.k8s.io/v1 Leases (a REST client for that group).
	Leases         rest.Interface
	LeaseNamespace string
	// LeaseName is empty for a component that elects no leader (kube-apiserver): its health
	// endpoint (/readyz) and the soak are the proof.
	LeaseName string
	Hostname  string // this master's name, the prefix of its instances' Lease identities
	// ImageDigest, if set, is the digest the container must run ("sha256:..."), checked in the
	// mirror pod PodNamespace/PodName (the static pod's name, "-", the node's name) read
	// through Pods, a REST client for the core group.
	ImageDigest   string
	Pods          rest.Interface
	PodNamespace  string
	PodName       string
	ContainerName string
	Interval      time.Duration
	Soak          time.Duration
	// RequestTimeout bounds each request (default 5 s).
	RequestTimeout time.Duration

	before     []Process
	leaseFound bool
	holder     string
	renewTime  time.Time
}

var insecureHTTP = &http.Client{
	// The components serve their own self-signed certificate on localhost.
	Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}},
}

func (v *ComponentVerifier) requestTimeout() time.Duration {
	if v.RequestTimeout > 0 {
		return v.RequestTimeout
	}
	return 5 * time.Second
}

func (v *ComponentVerifier) getLease(parent context.Context) (*coordinationv1.Lease, error) {
	ctx, cancel := context.WithTimeout(parent, v.requestTimeout())
	defer cancel()
	lease := &coordinationv1.Lease{}
	err := v.Leases.Get().Namespace(v.LeaseNamespace).Resource("leases").Name(v.LeaseName).Context(ctx).Do().Into(lease)
	switch {
	case err != nil && parent.Err() != nil:
		return nil, parent.Err() // the verification's own time is up, not this request's
	case err != nil && ctx.Err() != nil:
		return nil, fmt.Errorf("Lease %s/%s: no answer within %v", v.LeaseNamespace, v.LeaseName, v.requestTimeout())
	}
	return lease, err
}

func (v *ComponentVerifier) health(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, v.requestTimeout())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, v.HealthURL, nil)
	if err != nil {
		return err
	}
	resp, err := insecureHTTP.Do(req)
	if err != nil {
		return fmt.Errorf("health %s: %v", v.HealthURL, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("health %s: %s", v.HealthURL, resp.Status)
	}
	return nil
}

// Before checks that the apiserver answers and notes the Lease holder and the running processes.
func (v *ComponentVerifier) Before(ctx context.Context) error {
	if err := v.noteLease(ctx); err != nil {
		return err
	}
	if err := v.mirrorPodFound(ctx); err != nil {
		return err
	}
	var err error
	v.before, err = v.Procs.named(v.Comm, v.OldArgs)
	return err
}

// noteLease records who holds the Lease before the change (nothing for a component that elects
// no leader).
func (v *ComponentVerifier) noteLease(ctx context.Context) error {
	if v.LeaseName == "" {
		return nil
	}
	lease, err := v.getLease(ctx)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return fmt.Errorf("the apiserver cannot be asked for the Lease, so the component could not be verified: %v", err)
	default:
		v.leaseFound = true
		if lease.Spec.HolderIdentity != nil {
			v.holder = *lease.Spec.HolderIdentity
		}
		if lease.Spec.RenewTime != nil {
			v.renewTime = lease.Spec.RenewTime.Time
		}
	}
	return nil
}

// mirrorPodFound checks, before the swap, that the mirror pod in which the pinned digest will be
// checked exists: a Node not named after the host would otherwise cost the whole --timeout and a
// rollback.
func (v *ComponentVerifier) mirrorPodFound(parent context.Context) error {
	if v.ImageDigest == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(parent, v.requestTimeout())
	defer cancel()
	err := v.Pods.Get().Namespace(v.PodNamespace).Resource("pods").Name(v.PodName).Context(ctx).Do().Error()
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("mirror pod %s/%s not found, in which the digest the kubelet runs would be checked: the kubelet names it after its Node; if this host's Node is named otherwise, give --node-name", v.PodNamespace, v.PodName)
	case err != nil:
		return fmt.Errorf("the apiserver cannot be asked for the mirror pod %s/%s, so the digest could not be verified: %v", v.PodNamespace, v.PodName, err)
	}
	return nil
}

// leaseState says whether the Lease shows a leader renewing since the change, and who. A renewal
// is any change of holder or renew time: each holder writes its own clock, so times of two
// masters are not compared.
func (v *ComponentVerifier) leaseState(ctx context.Context) (string, error) {
	if v.LeaseName == "" {
		return fmt.Sprintf("elects no leader: verified by %s and the soak", v.HealthURL), nil
	}
	lease, err := v.getLease(ctx)
	if apierrors.IsNotFound(err) && !v.leaseFound {
		// No instance locks through this Lease (the masters run the endpoints or configmaps lock).
		return fmt.Sprintf("no Lease %s/%s (the masters lock elsewhere): verified by health and the soak", v.LeaseNamespace, v.LeaseName), nil
	}
	if err != nil {
		return "", err
	}
	holder := ""
	if lease.Spec.HolderIdentity != nil {
		holder = *lease.Spec.HolderIdentity
	}
	renewed := lease.Spec.RenewTime != nil && (holder != v.holder || !lease.Spec.RenewTime.Time.Equal(v.renewTime))
	if !renewed {
		return "", fmt.Errorf("Lease %s/%s not renewed since the change", v.LeaseNamespace, v.LeaseName)
	}
	thisHost := strings.HasPrefix(holder, v.Hostname+"_")
	if holder == v.holder && thisHost {
		return "", fmt.Errorf("Lease %s/%s still renewed by %s, this master's old instance", v.LeaseNamespace, v.LeaseName, holder)
	}
	if thisHost {
		return fmt.Sprintf("leads: Lease %s/%s held and renewed by %s", v.LeaseNamespace, v.LeaseName, holder), nil
	}
	return fmt.Sprintf("stands by: Lease %s/%s held and renewed by %s on another master", v.LeaseNamespace, v.LeaseName, holder), nil
}

// After waits for the new process, its health, a Lease renewal, and the soak. The kubelet 1.17 may
// start the new pod before the old one is gone, so health counts only once the old processes have
// exited; and a new process that exits (a port still taken by the old one, a crash) is followed
// by the next one the kubelet starts, until the timeout.
func (v *ComponentVerifier) After(ctx context.Context) (string, error) {
	seen := append([]Process{}, v.before...)
	var exited []string
	for {
		proc, err := v.Procs.WaitForNew(ctx, v.Comm, v.Args, seen, v.Interval)
		if err != nil {
			if len(exited) > 0 {
				return "", fmt.Errorf("%v; the new process exited %d time(s), last: %s", err, len(exited), exited[len(exited)-1])
			}
			return "", err
		}
		if err := v.Procs.WaitGone(ctx, v.before, v.Interval); err != nil {
			return "", fmt.Errorf("timed out: %v", err)
		}
		summary, err := v.proveAndSoak(ctx, proc)
		if err == nil || v.Procs.Alive(proc) || ctx.Err() != nil {
			return summary, err
		}
		seen = append(seen, proc)
		exited = append(exited, err.Error())
	}
}

// proveAndSoak waits for health and a Lease renewal, then watches the process for the soak.
func (v *ComponentVerifier) proveAndSoak(ctx context.Context, proc Process) (string, error) {
	var lease string
	missing := fmt.Errorf("nothing checked yet")
	for {
		err := v.health(ctx)
		if err == nil {
			lease, err = v.leaseState(ctx)
		}
		if err == nil {
			err = v.imageState(ctx)
		}
		if err == nil {
			break
		}
		if ctx.Err() == nil {
			missing = err // what the last complete check found missing
		}
		if !v.Procs.Alive(proc) {
			return "", fmt.Errorf("the new %s (pid %d) exited: %v", v.Comm, proc.PID, missing)
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("timed out: %v", missing)
		case <-time.After(v.Interval):
		}
	}
	soakEnd := time.Now().Add(v.Soak)
	for time.Now().Before(soakEnd) {
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("timed out during the %v soak", v.Soak)
		case <-time.After(v.Interval):
		}
		if !v.Procs.Alive(proc) {
			return "", fmt.Errorf("the new %s (pid %d) exited during the %v soak", v.Comm, proc.PID, v.Soak)
		}
		if err := v.health(ctx); err != nil {
			return "", fmt.Errorf("during the %v soak: %v", v.Soak, err)
		}
	}
	summary := fmt.Sprintf("new %s pid %d healthy for %v; %s", v.Comm, proc.PID, v.Soak, lease)
	if v.ImageDigest != "" {
		summary += fmt.Sprintf("; the kubelet runs %s", v.ImageDigest)
	}
	return summary, nil
}

// imageState checks that the mirror pod reports the pinned digest for the container, running.
func (v *ComponentVerifier) imageState(parent context.Context) error {
	if v.ImageDigest == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(parent, v.requestTimeout())
	defer cancel()
	pod := &corev1.Pod{}
	if err := v.Pods.Get().Namespace(v.PodNamespace).Resource("pods").Name(v.PodName).Context(ctx).Do().Into(pod); err != nil {
		return fmt.Errorf("mirror pod %s/%s: %v", v.PodNamespace, v.PodName, err)
	}
	for _, st := range pod.Status.ContainerStatuses {
		if st.Name != v.ContainerName {
			continue
		}
		switch {
		case st.State.Running == nil:
			return fmt.Errorf("mirror pod %s/%s: container %s is not running", v.PodNamespace, v.PodName, st.Name)
		case !strings.HasSuffix(st.ImageID, "@"+v.ImageDigest):
			return fmt.Errorf("mirror pod %s/%s: container %s runs image ID %q, not the pinned %s", v.PodNamespace, v.PodName, st.Name, st.ImageID, v.ImageDigest)
		}
		return nil
	}
	return fmt.Errorf("mirror pod %s/%s has no status of container %s yet", v.PodNamespace, v.PodName, v.ContainerName)
}

// KubeAPIServer is the component that elects no leader: a restarted kube-apiserver proves itself
// by its readiness endpoint instead of a Lease renewal.
const KubeAPIServer = "kube-apiserver"

// VerifyURL is the endpoint that must answer 200 for the changed component to count as up: its
// liveness probe's (HealthURL), except for kube-apiserver, whose probe (kubeadm 1.17: /healthz)
// is asked for /readyz on the same address instead. /readyz also fails while the apiserver
// shuts down, so the old process cannot pass for the new one.
func VerifyURL(e *Edited) (string, error) {
	url, err := HealthURL(e.After, e.Container)
	if err != nil || e.Component != KubeAPIServer {
		return url, err
	}
	u, err := neturl.Parse(url)
	if err != nil {
		return "", err
	}
	u.Path, u.RawQuery = "/readyz", ""
	return u.String(), nil
}

// HealthURL derives the component's health URL from the container's liveness probe, as the
// kubelet checks it: the probe's host (the pod's IP, which for a host-network static pod is the
// node's, when none is given; cpswap runs on that node and uses loopback), scheme, a numeric or
// named port, and path.
func HealthURL(data []byte, containerName string) (string, error) {
	pod, err := Parse(data)
	if err != nil {
		return "", err
	}
	c, err := container(pod, containerName)
	if err != nil {
		return "", err
	}
	if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet == nil {
		return "", fmt.Errorf("container %s has no httpGet liveness probe: give --health-url", c.Name)
	}
	get := c.LivenessProbe.HTTPGet
	host := get.Host
	if host == "" {
		host = "127.0.0.1"
	}
	port := get.Port.IntValue()
	if port == 0 {
		for _, p := range c.Ports {
			if p.Name == get.Port.StrVal {
				port = int(p.ContainerPort)
			}
		}
		if port == 0 {
			return "", fmt.Errorf("container %s: liveness probe port %q is neither a number nor one of its named ports", c.Name, get.Port.String())
		}
	}
	scheme := "http"
	if get.Scheme == "HTTPS" {
		scheme = "https"
	}
	path := get.Path
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	return fmt.Sprintf("%s://%s%s", scheme, net.JoinHostPort(host, strconv.Itoa(port)), path), nil
}

package cpswap

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// HealthAndLease verifies a restarted component: its health endpoint answers 200 and the leader
// Lease is renewed after `since` (by the new instance if it leads, or by the leader on another
// master). It polls until ctx ends and reports what was last missing.
func HealthAndLease(healthURL string, client kubernetes.Interface, namespace, lease string, since time.Time, interval time.Duration) Verifier {
	httpClient := &http.Client{
		Timeout: 5 * time.Second,
		// The components serve their own self-signed certificate on localhost.
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}},
	}
	return func(ctx context.Context) error {
		missing := "nothing checked yet"
		for {
			missing = checkOnce(httpClient, healthURL, client, namespace, lease, since)
			if missing == "" {
				return nil
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("timed out: %s", missing)
			case <-time.After(interval):
			}
		}
	}
}

func checkOnce(httpClient *http.Client, healthURL string, client kubernetes.Interface, namespace, lease string, since time.Time) string {
	resp, err := httpClient.Get(healthURL)
	if err != nil {
		return fmt.Sprintf("health %s: %v", healthURL, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Sprintf("health %s: %s", healthURL, resp.Status)
	}
	l, err := client.CoordinationV1().Leases(namespace).Get(lease, metav1.GetOptions{})
	if err != nil {
		return fmt.Sprintf("Lease %s/%s: %v", namespace, lease, err)
	}
	if l.Spec.RenewTime == nil || !l.Spec.RenewTime.Time.After(since) {
		return fmt.Sprintf("Lease %s/%s not renewed since %s", namespace, lease, since.Format(time.RFC3339))
	}
	return ""
}

// HealthURL derives the component's health URL from the container's liveness probe, as the
// kubelet checks it.
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
	scheme := "http"
	if get.Scheme == "HTTPS" {
		scheme = "https"
	}
	return fmt.Sprintf("%s://%s:%s%s", scheme, host, get.Port.String(), get.Path), nil
}

package main

import (
	"fmt"
	"net/url"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/idc-lts/kube-1.17/pkg/cpswap"
	"github.com/idc-lts/kube-1.17/pkg/diagnose"
)

// Bounds of diagnose's knobs: a window long enough to see a lock renewed, short enough to be a
// check; a rate no apiserver notices.
const (
	minWindow = 10 * time.Second
	maxWindow = 30 * time.Minute
	maxQPS    = 20
)

func newDiagnose() *cobra.Command {
	var (
		kubeconfig, output string
		window             time.Duration
		qps                float32
		burst              int
		metrics            []string
	)
	cmd := &cobra.Command{
		Use:   "diagnose [--kubeconfig FILE] [--window 2m] [--output text|json]",
		Short: "Read-only: watch the cluster for a while and report which known 1.17 incidents it shows or is exposed to",
		Long: `diagnose looks at a live cluster without changing it and reports, for each incident behind this
fork, what it saw, the evidence, what it means and what fixes it:

  leader-election-endpoints  the lock kube-controller-manager and kube-scheduler use, and the
                             writes per minute their renewals make to kube-system Endpoints
  resync-rewrites            Endpoints rewrites that change no address, per minute and per
                             Service; headless Services; what the next resync writes and when
  client-throttling          kube-controller-manager's --kube-api-qps/--kube-api-burst, how long a
                             resync waits at that rate, and the measured wait where exported
  back-in-time               the conditions for a controller going back in time (several
                             apiservers, components without the fix) and its traces: Endpoints
                             of live Services deleted
  components                 what runs on the masters: image, version, ours or not, digest

It reads the control plane's static (mirror) pods in kube-system, watches Endpoints, Services and
kube-system Leases for --window, and scrapes the /metrics URLs given with --metrics. Every
request is a GET (anything else is refused before it leaves), at most --qps per second. The
release's cpswap-diagnose.yaml grants exactly what it reads.

Run it before the swap (docs/operations.md) and after it.

Exit codes: 0 nothing found; 1 could not look (the error says why); 2 usage error;
5 exposed (the conditions for an incident are present); 6 observed (an incident seen).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if window < minWindow || window > maxWindow {
				return usageError{fmt.Errorf("--window %v: must be between %v and %v", window, minWindow, maxWindow)}
			}
			if qps <= 0 || qps > maxQPS {
				return usageError{fmt.Errorf("--qps %v: must be above 0 and at most %d", qps, maxQPS)}
			}
			if burst < 1 || burst > 2*maxQPS {
				return usageError{fmt.Errorf("--burst %d: must be between 1 and %d", burst, 2*maxQPS)}
			}
			if output != "text" && output != "json" {
				return usageError{fmt.Errorf("--output %q: must be text or json", output)}
			}
			urls, err := metricsURLs(metrics)
			if err != nil {
				return usageError{err}
			}
			rules := clientcmd.NewDefaultClientConfigLoadingRules()
			rules.ExplicitPath = kubeconfig
			cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
			if err != nil {
				return &cpswap.Failure{Code: cpswap.ExitRefused, Err: fmt.Errorf("kubeconfig: %v", err)}
			}
			report, err := diagnose.Run(interruptible(), cfg, diagnose.Options{
				Window: window, QPS: qps, Burst: burst, Metrics: urls, Progress: os.Stderr,
			})
			if err != nil {
				return &cpswap.Failure{Code: cpswap.ExitRefused, Err: err}
			}
			if output == "json" {
				err = report.WriteJSON(os.Stdout)
			} else {
				err = report.WriteText(os.Stdout)
			}
			if err != nil {
				return &cpswap.Failure{Code: cpswap.ExitRefused, Err: fmt.Errorf("writing the report: %v", err)}
			}
			if code := report.ExitCode(); code != cpswap.ExitOK {
				return &cpswap.Failure{Code: code, Err: fmt.Errorf("%s: %s", report.Worst(), worstFindings(report))}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig with read rights (default: $KUBECONFIG, then ~/.kube/config)")
	cmd.Flags().DurationVar(&window, "window", diagnose.DefaultWindow, "how long to watch")
	cmd.Flags().Float32Var(&qps, "qps", diagnose.DefaultQPS, "requests per second to the apiserver, at most")
	cmd.Flags().IntVar(&burst, "burst", diagnose.DefaultBurst, "requests in a burst, at most")
	cmd.Flags().StringArrayVar(&metrics, "metrics", nil, "COMPONENT=URL of a component's /metrics, read at the start and end of the window (repeatable; on a kubeadm master kube-controller-manager=http://127.0.0.1:10252/metrics)")
	cmd.Flags().StringVar(&output, "output", "text", "text (a person) or json (a fleet)")
	return cmd
}

// metricsURLs checks --metrics values: a component diagnose reads, and an http(s) URL.
func metricsURLs(values []string) (map[string]string, error) {
	known := map[string]bool{cpswap.KubeAPIServer: true, "kube-controller-manager": true, "kube-scheduler": true}
	out := map[string]string{}
	for _, v := range values {
		component, raw, ok := strings.Cut(v, "=")
		if !ok || !known[component] {
			var names []string
			for n := range known {
				names = append(names, n)
			}
			sort.Strings(names)
			return nil, fmt.Errorf("--metrics %q: want COMPONENT=URL, COMPONENT one of %s", v, strings.Join(names, ", "))
		}
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("--metrics %q: %q is not an http(s) URL", v, raw)
		}
		if _, dup := out[component]; dup {
			return nil, fmt.Errorf("--metrics %q: %s given twice", v, component)
		}
		out[component] = raw
	}
	return out, nil
}

// worstFindings names the findings at the report's worst severity.
func worstFindings(r *diagnose.Report) string {
	var ids []string
	for _, f := range r.Findings {
		if f.Severity == r.Worst() {
			ids = append(ids, f.ID)
		}
	}
	return strings.Join(ids, ", ")
}

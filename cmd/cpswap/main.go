// Command cpswap swaps the image (and flags) of a kubeadm static-pod manifest safely, verifies
// that the kubelet runs it, and rolls back otherwise. `cpswap --help` lists the verbs.
//
// Exit codes: 0 done; 1 refused, nothing changed; 2 usage error, nothing changed; 3 changed, then
// rolled back (the manifest is as it was); 4 changed and could not be rolled back: act now.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/idc-lts/kube-1.17/pkg/cpswap"
	"github.com/idc-lts/kube-1.17/pkg/registry"
)

// usageError marks errors of the command line (exit 2, usage printed).
type usageError struct{ error }

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	root := newRoot()
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	if err == nil {
		return cpswap.ExitOK
	}
	var f *cpswap.Failure
	if errors.As(err, &f) && f.Code != cpswap.ExitUsage {
		fmt.Fprintf(os.Stderr, "cpswap %s: %v\n", cmd.Name(), err)
		return f.Code
	}
	// Everything else comes from the command line: unknown verbs and flags, missing ones.
	fmt.Fprintf(os.Stderr, "Error: %v\n\n%s", err, cmd.UsageString())
	return cpswap.ExitUsage
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "cpswap",
		Short: "Swap the image and flags of a kubeadm static-pod manifest, verified or rolled back",
		Long: `cpswap changes the image (and flags) of a static-pod manifest in /etc/kubernetes/manifests,
waits for the kubelet to run it and for the component to prove itself, and restores the
manifest as it was otherwise. One apply runs at a time per manifest; Ctrl-C, SIGTERM, SIGQUIT
or SIGHUP (unless ignored, as under nohup) during an apply roll back; every successful apply is
recorded and can be undone in order. cpswap diagnose looks at a live cluster, read-only, before
and after the swap.

Exit codes: 0 done; 1 refused, nothing changed; 2 usage error, nothing changed;
3 changed, then rolled back; 4 changed and the rollback failed: act now;
diagnose only: 5 exposed, 6 observed.`,
		SilenceErrors: true,
		SilenceUsage:  true,
		// Runnable, so that an unknown verb is an error (exit 2) rather than help.
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	root.CompletionOptions.DisableDefaultCmd = true
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(newPlan(), newApply(), newRollback(), newHistory(), newStatus(), newDiagnose())
	return root
}

// target flags every verb has.
type target struct {
	manifest, backupDir, container string
}

func (t *target) bind(cmd *cobra.Command) {
	cmd.Flags().StringVar(&t.manifest, "manifest", "", "static-pod manifest, e.g. /etc/kubernetes/manifests/kube-controller-manager.yaml (required)")
	cmd.Flags().StringVar(&t.backupDir, "backup-dir", "/var/lib/cpswap/backups", "backups, history and lock: outside the manifests directory, owned by root, writable by nobody else")
	_ = cmd.MarkFlagRequired("manifest")
}

// change flags of plan and apply.
type changeFlags struct {
	image, profile  string
	flags           []string
	verifyKey       string
	registry        registry.Options
	registryTimeout time.Duration
}

func (c *changeFlags) bind(cmd *cobra.Command, t *target) {
	cmd.Flags().StringVar(&c.image, "image", "", "new image, REGISTRY/COMPONENT:TAG, REGISTRY/COMPONENT@sha256:DIGEST or both")
	cmd.Flags().StringVar(&c.profile, "profile", "", "named flag profiles, comma-separated: "+strings.Join(cpswap.ProfileNames(), ", "))
	cmd.Flags().StringArrayVar(&c.flags, "flag", nil, "set a component flag, --flag=--name=value (repeatable; a flag the component's --help lists)")
	cmd.Flags().StringVar(&t.container, "container", "", "container to change (default: the only one)")
	cmd.Flags().StringVar(&c.verifyKey, "verify-key", "", "cosign public key: refuse an --image (pinned by digest) whose signature in its registry does not verify with it")
	cmd.Flags().StringVar(&c.registry.CAFile, "registry-ca-file", "", "PEM file of the CA of the image's registry, for --verify-key (credentials: DOCKER_CONFIG or ~/.docker/config.json)")
	cmd.Flags().BoolVar(&c.registry.PlainHTTP, "registry-plain-http", false, "allow plain HTTP to the image's registry, for --verify-key")
	cmd.Flags().DurationVar(&c.registryTimeout, "registry-timeout", time.Minute, "bound on the registry's answers for --verify-key (the tag's digest, the signature)")
}

// verifySignature checks the planned image's signature when --verify-key asks for it.
func (c *changeFlags) verifySignature(ctx context.Context, e *cpswap.Edited) error {
	if c.verifyKey == "" {
		return nil
	}
	if c.image == "" {
		return &cpswap.Failure{Code: cpswap.ExitUsage, Err: errors.New("--verify-key checks the image of --image: give --image")}
	}
	verified, err := cpswap.VerifySignature(ctx, e.Image, c.verifyKey, c.registry, c.registryTimeout)
	if err != nil {
		return err
	}
	fmt.Printf("signature: %s\n", verified)
	return nil
}

func (c *changeFlags) change(cmd *cobra.Command, t *target) (cpswap.Change, error) {
	change := cpswap.Change{Container: t.container, Image: c.image}
	if cmd.Flags().Changed("image") && c.image == "" {
		return change, &cpswap.Failure{Code: cpswap.ExitUsage, Err: errors.New("--image is empty (an unset variable?)")}
	}
	profiles, err := cpswap.LookupProfiles(c.profile)
	if err != nil {
		return change, &cpswap.Failure{Code: cpswap.ExitUsage, Err: err}
	}
	change.Profiles = profiles
	for _, s := range c.flags {
		f, err := cpswap.ParseFlag(s)
		if err != nil {
			return change, &cpswap.Failure{Code: cpswap.ExitUsage, Err: err}
		}
		change.Flags = append(change.Flags, f)
	}
	if change.Image == "" && len(change.Profiles) == 0 && len(change.Flags) == 0 {
		return change, &cpswap.Failure{Code: cpswap.ExitUsage, Err: errors.New("nothing to change: give --image, --profile or --flag")}
	}
	return change, nil
}

func printPlan(e *cpswap.Edited, manifest string) {
	for _, n := range e.Notes {
		fmt.Printf("note: %s\n", n)
	}
	if e.Unchanged() {
		fmt.Printf("no change: %s already runs what was asked\n", manifest)
		return
	}
	fmt.Print(cpswap.Diff(manifest, e.Before, e.After))
}

func warnPending(s *cpswap.Swapper, manifest string) {
	if p := s.Pending(manifest); p != "" {
		fmt.Fprintf(os.Stderr, "warning: %s\n", p)
	}
}

func newPlan() *cobra.Command {
	var t target
	var c changeFlags
	cmd := &cobra.Command{
		Use:   "plan --manifest FILE [--image IMAGE] [--profile P] [--flag --name=value]...",
		Short: "Show the change as a diff; change nothing",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			change, err := c.change(cmd, &t)
			if err != nil {
				return err
			}
			warnPending(&cpswap.Swapper{BackupDir: t.backupDir}, t.manifest)
			e, err := cpswap.Plan(t.manifest, change)
			if err != nil {
				return err
			}
			printPlan(e, t.manifest)
			return c.verifySignature(interruptible(), e)
		},
	}
	t.bind(cmd)
	c.bind(cmd, &t)
	return cmd
}

func newApply() *cobra.Command {
	var t target
	var c changeFlags
	var vf verifyFlags
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "apply --manifest FILE [--image IMAGE] [--profile P] [--flag --name=value]... [--timeout 3m]",
		Short: "Make the change, verify the restarted component, roll back if it does not verify",
		Long: `apply shows the plan, takes the manifest's lock (a second apply fails at once, naming the
first one's PID), checks that verification can work (the apiserver answers), writes a journal and
backups, replaces the manifest atomically, and waits up to --timeout for: a new process of the
component, its health endpoint, a renewal of its leader Lease, and --soak of steady health.
kube-apiserver elects no leader: its /readyz (on its liveness probe's address) and the soak
verify it.
Anything else, or Ctrl-C / SIGTERM / SIGQUIT / SIGHUP meanwhile, restores the manifest as it was.
A change that leaves the manifest as it is writes nothing and exits 0.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			change, err := c.change(cmd, &t)
			if err != nil {
				return err
			}
			if timeout < vf.soak+cpswap.StartMargin {
				return &cpswap.Failure{Code: cpswap.ExitUsage, Err: fmt.Errorf("--timeout (%v) must be longer than --soak (%v) by %v at least: the kubelet reads the manifests directory every 20 s, then starts the component, which must lead or stand by before the soak begins", timeout, vf.soak, cpswap.StartMargin)}
			}
			s := &cpswap.Swapper{BackupDir: t.backupDir, Timeout: timeout, Log: func(format string, args ...interface{}) {
				fmt.Fprintf(os.Stderr, format+"\n", args...)
			}}
			e, err := cpswap.Plan(t.manifest, change)
			if err != nil {
				return err
			}
			printPlan(e, t.manifest)
			ctx := interruptible()
			if err := c.verifySignature(ctx, e); err != nil {
				return err
			}
			// Apply plans again under the manifest's lock; a verifier that cannot be built only
			// matters if that plan changes something (then it refuses, with this reason).
			verifier, err := vf.newVerifier(e)
			if err != nil {
				verifier = cannotVerify{err}
			}
			applied, err := s.Apply(ctx, t.manifest, change, verifier)
			if err != nil {
				return err
			}
			if applied.Edited.Unchanged() {
				return nil
			}
			// Absolute, so that the hint works from any directory.
			manifest, _ := filepath.Abs(t.manifest)
			backupDir, _ := filepath.Abs(t.backupDir)
			fmt.Printf("applied and verified %s: %s\n(undo with: cpswap rollback --manifest %s --backup-dir %s)\n",
				t.manifest, applied.Verified, manifest, backupDir)
			return nil
		},
	}
	t.bind(cmd)
	c.bind(cmd, &t)
	cmd.Flags().StringVar(&vf.kubeconfig, "kubeconfig", "/etc/kubernetes/admin.conf", "kubeconfig to read the leader Lease and the mirror pod with")
	cmd.Flags().StringVar(&vf.healthURL, "health-url", "", "health endpoint to verify (default: from the container's liveness probe; for kube-apiserver its path is /readyz)")
	cmd.Flags().StringVar(&vf.lease, "lease", "", "leader Lease namespace/name (default: kube-system/<component>; none for kube-apiserver)")
	cmd.Flags().StringVar(&vf.process, "process", "", "process name of the component (default: the component)")
	cmd.Flags().StringVar(&vf.hostname, "hostname", "", "this master's name as its Lease identities start (default: the host name)")
	cmd.Flags().StringVar(&vf.nodeName, "node-name", "", "this master's Node name, for the mirror pod whose image ID is checked when --image pins a digest (default: the host name, lower case)")
	cmd.Flags().DurationVar(&timeout, "timeout", 3*time.Minute, "how long to wait for the component to verify before rolling back")
	cmd.Flags().DurationVar(&vf.soak, "soak", 30*time.Second, "how long the new process must stay up and healthy")
	cmd.Flags().BoolVar(&vf.checkCmdline, "check-cmdline", true, "count only a process whose command line ends with the new manifest's flags as new, and one that ends with the old manifest's as the old")
	return cmd
}

// verifyFlags are apply's flags that say how to verify the restarted component.
type verifyFlags struct {
	kubeconfig, healthURL, lease, process, hostname, nodeName string
	soak                                                      time.Duration
	checkCmdline                                              bool
}

// newVerifier builds the verifier of a planned change from the flags, defaults filled in.
func (f verifyFlags) newVerifier(e *cpswap.Edited) (cpswap.Verifier, error) {
	bad := func(format string, args ...interface{}) error {
		return &cpswap.Failure{Code: cpswap.ExitRefused, Err: fmt.Errorf(format, args...)}
	}
	var err error
	if f.healthURL == "" {
		if f.healthURL, err = cpswap.VerifyURL(e); err != nil {
			return nil, bad("%v", err)
		}
	}
	namespace, name := cpswap.LeaseOf(e)
	if f.lease != "" && e.Component == cpswap.KubeAPIServer {
		return nil, &cpswap.Failure{Code: cpswap.ExitUsage, Err: fmt.Errorf("--lease %s: %s elects no leader; it is verified by --health-url (default: its liveness probe's address, path /readyz)", f.lease, e.Component)}
	}
	if f.lease != "" {
		var ok bool
		if namespace, name, ok = strings.Cut(f.lease, "/"); !ok || namespace == "" || name == "" {
			return nil, &cpswap.Failure{Code: cpswap.ExitUsage, Err: fmt.Errorf("--lease: want namespace/name, got %q", f.lease)}
		}
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", f.kubeconfig)
	if err != nil {
		return nil, bad("kubeconfig %s: %v", f.kubeconfig, err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, bad("kubeconfig %s: %v", f.kubeconfig, err)
	}
	procs, err := cpswap.HostProcesses()
	if err != nil {
		return nil, bad("%v", err)
	}
	if f.process == "" {
		f.process = e.Component
	}
	if f.hostname == "" {
		if f.hostname, err = os.Hostname(); err != nil {
			return nil, bad("%v", err)
		}
	}
	var args, oldArgs []string
	if f.checkCmdline {
		if args, err = cpswap.ComponentArgs(e); err != nil {
			return nil, bad("%v", err)
		}
		if oldArgs, err = cpswap.OriginalArgs(e); err != nil {
			return nil, bad("%v", err)
		}
	}
	v := &cpswap.ComponentVerifier{
		Procs: procs, Comm: f.process, Args: args, OldArgs: oldArgs, HealthURL: f.healthURL,
		Leases: client.CoordinationV1().RESTClient(), LeaseNamespace: namespace, LeaseName: name,
		Hostname: f.hostname, Interval: time.Second, Soak: f.soak,
	}
	if e.Image.Digest != "" {
		if f.nodeName == "" {
			f.nodeName = strings.ToLower(f.hostname)
		}
		pod, err := cpswap.Parse(e.After)
		if err != nil {
			return nil, bad("%v", err)
		}
		v.ImageDigest, v.Pods, v.ContainerName = e.Image.Digest, client.CoreV1().RESTClient(), e.Container
		v.PodNamespace, v.PodName = pod.Namespace, pod.Name+"-"+f.nodeName
		if v.PodNamespace == "" {
			v.PodNamespace = "kube-system"
		}
	}
	return v, nil
}

// cannotVerify refuses any change: verification could not be set up.
type cannotVerify struct{ err error }

func (c cannotVerify) Before(context.Context) error { return c.err }
func (c cannotVerify) After(context.Context) (string, error) {
	return "", c.err
}

// interruptible returns a context that SIGINT, SIGTERM, SIGQUIT and SIGHUP cancel, naming the
// signal. SIGQUIT too: Go's default for it (a stack dump, exit 2) would leave an unverified manifest
// live and exit as if the command line were wrong; the stack dump is still written, for whoever
// sent it to see where cpswap waits. SIGHUP only when it is not ignored: under nohup it stays
// ignored (signal.Notify would re-enable it). A dropped SSH session also closes stdout: SIGPIPE is
// ignored so that writing to it cannot kill cpswap in the middle of a rollback.
func interruptible() context.Context {
	signal.Ignore(syscall.SIGPIPE)
	caught := []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT}
	if !signal.Ignored(syscall.SIGHUP) {
		caught = append(caught, syscall.SIGHUP)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, caught...)
	go func() {
		s := <-signals
		if s == syscall.SIGQUIT {
			stacks := make([]byte, 1<<20)
			fmt.Fprintf(os.Stderr, "SIGQUIT: the goroutines' stacks, then a rollback:\n%s\n", stacks[:runtime.Stack(stacks, true)])
		}
		cancel(fmt.Errorf("received %v", s))
		// Later signals are caught and dropped: the rollback under way must finish.
	}()
	return ctx
}

func newRollback() *cobra.Command {
	var t target
	var to string
	var force bool
	cmd := &cobra.Command{
		Use:   "rollback --manifest FILE [--to original] [--force]",
		Short: "Undo the last successful apply (again for the one before), or an unfinished one",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if to != "" && to != "original" {
				return &cpswap.Failure{Code: cpswap.ExitUsage, Err: fmt.Errorf("--to takes only \"original\", got %q", to)}
			}
			r, err := (&cpswap.Swapper{BackupDir: t.backupDir}).Rollback(t.manifest, to == "original", force)
			if err != nil {
				return err
			}
			switch {
			case r.Undone == nil:
				fmt.Printf("restored %s as it was before the unfinished apply, from %s (sha256 %s)\n", t.manifest, r.Backup, short(r.To))
			default:
				fmt.Printf("restored %s from %s (sha256 %s), undoing the apply of %s (image %s)\n", t.manifest, r.Backup, short(r.To), r.Undone.Time.Format(time.RFC3339), orNone(r.Undone.Image))
			}
			if r.Next != nil {
				fmt.Printf("the next rollback would undo the apply of %s (image %s)\n", r.Next.Time.Format(time.RFC3339), orNone(r.Next.Image))
			} else if r.Undone != nil {
				fmt.Println("this is the manifest as it was before the first recorded apply")
			}
			return nil
		},
	}
	t.bind(cmd)
	cmd.Flags().StringVar(&to, "to", "", `"original": back to the manifest as it was before the first recorded apply`)
	cmd.Flags().BoolVar(&force, "force", false, "roll back even though the manifest was edited since the apply")
	return cmd
}

func newHistory() *cobra.Command {
	var t target
	cmd := &cobra.Command{
		Use:   "history --manifest FILE",
		Short: "List the recorded applies, oldest first; rollback undoes the last",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			h, pending, err := (&cpswap.Swapper{BackupDir: t.backupDir}).HistoryOf(t.manifest)
			if err != nil {
				return err
			}
			if pending != "" {
				fmt.Fprintf(os.Stderr, "warning: %s\n", pending)
			}
			if len(h.Applied) == 0 {
				fmt.Printf("no apply of %s recorded in %s\n", t.manifest, t.backupDir)
			}
			entry := func(label string, e cpswap.Entry) {
				fmt.Printf("%s  %s  %s -> %s  image %s  flags %s\n   before %s\n   after  %s\n   %s\n", label, e.Time.Format(time.RFC3339),
					short(e.Before.SHA256), short(e.After.SHA256), orNone(e.Image), orNone(strings.Join(e.Flags, " ")),
					filepath.Join(t.backupDir, e.Before.Backup), filepath.Join(t.backupDir, e.After.Backup), e.Result)
			}
			for i, e := range h.Applied {
				entry(strconv.Itoa(i+1), e)
			}
			if len(h.Overtaken) > 0 {
				fmt.Println("overtaken by another writer during verification (not undone by rollback):")
				for _, e := range h.Overtaken {
					entry("-", e)
				}
			}
			return nil
		},
	}
	t.bind(cmd)
	return cmd
}

func newStatus() *cobra.Command {
	var t target
	var process string
	cmd := &cobra.Command{
		Use:   "status --manifest FILE",
		Short: "What the manifest runs now, the process started from it, the rollback target, any unfinished apply",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			procs, err := cpswap.HostProcesses()
			if err != nil {
				return &cpswap.Failure{Code: cpswap.ExitRefused, Err: err}
			}
			st, err := (&cpswap.Swapper{BackupDir: t.backupDir}).StatusOf(t.manifest, t.container, process, procs)
			if err != nil {
				return err
			}
			fmt.Printf("manifest:  %s (sha256 %s)\ncontainer: %s\nimage:     %s\n", st.Manifest, short(st.SHA256), st.Container, st.Image)
			lock := st.Flags["--leader-elect-resource-lock"]
			switch {
			case st.Component == cpswap.KubeAPIServer:
				lock = "none (kube-apiserver elects no leader)"
			case lock == "":
				lock = "(not set: the image's default; endpointsleases for upstream 1.17, leases for this fork)"
			}
			fmt.Printf("lock:      %s\n", lock)
			for _, name := range []string{"--leader-elect", "--config", "--kube-api-qps", "--kube-api-burst"} {
				if v, ok := st.Flags[name]; ok {
					fmt.Printf("flag:      %s=%s\n", name, v)
				}
			}
			if st.Process != nil {
				fmt.Printf("process:   pid %d, started %s", st.Process.PID, st.ProcessStarted.Format(time.RFC3339))
				if !st.ProcessRunsManifest {
					fmt.Print(" (the newest of that name: none runs with this manifest's flags)")
				}
				fmt.Println()
			} else {
				fmt.Println("process:   none running")
			}
			if st.RollbackTarget != nil {
				fmt.Printf("rollback:  would undo the apply of %s (image %s), restoring sha256 %s; %d apply(s) recorded\n",
					st.RollbackTarget.Time.Format(time.RFC3339), orNone(st.RollbackTarget.Image), short(st.RollbackTarget.Before.SHA256), st.Applies)
			} else {
				fmt.Println("rollback:  nothing recorded")
			}
			if st.InProgress != 0 {
				fmt.Printf("apply:     in progress (cpswap pid %d)\n", st.InProgress)
			}
			if st.Unfinished != "" {
				fmt.Printf("UNFINISHED: %s\n", st.Unfinished)
			}
			return nil
		},
	}
	t.bind(cmd)
	cmd.Flags().StringVar(&t.container, "container", "", "container (default: the only one)")
	cmd.Flags().StringVar(&process, "process", "", "process name of the component (default: the component)")
	return cmd
}

func short(sum string) string {
	if len(sum) > 12 {
		return sum[:12]
	}
	return sum
}

func orNone(s string) string {
	if s == "" {
		return "(unchanged)"
	}
	return s
}

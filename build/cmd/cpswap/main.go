// Command cpswap swaps the image (and flags) of a kubeadm static-pod manifest safely.
//
//	cpswap plan     --manifest FILE --image IMAGE [--profile leases[,kcm-client-rate]] [--flag --name=value]...
//	cpswap apply    --manifest FILE --image IMAGE --backup-dir DIR --kubeconfig FILE [--timeout 3m] ...
//	cpswap rollback --manifest FILE --backup-dir DIR
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/idc-lts/kube-1.17/build/cpswap"
)

type flagList []cpswap.Flag

func (f *flagList) String() string { return fmt.Sprint(*f) }

func (f *flagList) Set(value string) error {
	name, v, ok := strings.Cut(value, "=")
	if !ok || !strings.HasPrefix(name, "--") {
		return fmt.Errorf("want --name=value, got %q", value)
	}
	*f = append(*f, cpswap.Flag{Name: name, Value: v})
	return nil
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: cpswap plan|apply|rollback --manifest FILE [options]; cpswap COMMAND -h for options")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2:]); err != nil {
		fmt.Fprintf(os.Stderr, "cpswap %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func profileNames() []string {
	names := make([]string, 0, len(cpswap.Profiles))
	for name := range cpswap.Profiles {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

func run(command string, args []string) error {
	fs := flag.NewFlagSet(command, flag.ContinueOnError)
	manifest := fs.String("manifest", "", "static-pod manifest, e.g. /etc/kubernetes/manifests/kube-controller-manager.yaml")
	image := fs.String("image", "", "new image of the container")
	containerName := fs.String("container", "", "container to change (default: the only one)")
	profile := fs.String("profile", "", "named flag profiles, comma-separated: "+strings.Join(profileNames(), ", "))
	backupDir := fs.String("backup-dir", "/var/lib/cpswap/backups", "where backups go: outside the manifests directory, on the same filesystem")
	kubeconfig := fs.String("kubeconfig", "/etc/kubernetes/admin.conf", "kubeconfig to read the leader Lease with")
	healthURL := fs.String("health-url", "", "health endpoint to verify (default: from the container's liveness probe)")
	lease := fs.String("lease", "", "leader Lease namespace/name (default: kube-system/<container name>)")
	processName := fs.String("process", "", "process name of the component, to see the kubelet restart it (default: the Lease name)")
	timeout := fs.Duration("timeout", 3*time.Minute, "how long apply waits for the component to verify before rolling back")
	var flags flagList
	fs.Var(&flags, "flag", "set a component flag, --name=value (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *manifest == "" {
		return fmt.Errorf("--manifest is required")
	}
	change := cpswap.Change{Container: *containerName, Image: *image}
	for _, name := range strings.Split(*profile, ",") {
		if name == "" {
			continue
		}
		p, ok := cpswap.Profiles[name]
		if !ok {
			return fmt.Errorf("unknown profile %q (known: %s)", name, strings.Join(profileNames(), ", "))
		}
		change.Flags = append(change.Flags, p...)
		if only := cpswap.ProfileOnlyFor[name]; only != "" {
			if change.OnlyFor != "" && change.OnlyFor != only {
				return fmt.Errorf("profiles for %s and %s cannot go into one manifest", change.OnlyFor, only)
			}
			change.OnlyFor = only
		}
	}
	change.Flags = append(change.Flags, flags...)
	swapper := &cpswap.Swapper{BackupDir: *backupDir}

	switch command {
	case "plan":
		_, _, diff, err := cpswap.Plan(*manifest, change)
		if err != nil {
			return err
		}
		if diff == "" {
			fmt.Println("no change")
		}
		fmt.Print(diff)
		return nil
	case "apply":
		before, err := os.ReadFile(*manifest)
		if err != nil {
			return err
		}
		pod, err := cpswap.Parse(before)
		if err != nil {
			return fmt.Errorf("%s: %v", *manifest, err)
		}
		url := *healthURL
		if url == "" {
			if url, err = cpswap.HealthURL(before, *containerName); err != nil {
				return err
			}
		}
		namespace, name := "kube-system", *containerName
		if name == "" && len(pod.Spec.Containers) == 1 {
			name = pod.Spec.Containers[0].Name
		}
		if *lease != "" {
			var ok bool
			if namespace, name, ok = strings.Cut(*lease, "/"); !ok {
				return fmt.Errorf("--lease: want namespace/name, got %q", *lease)
			}
		}
		cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
		if err != nil {
			return fmt.Errorf("kubeconfig %s: %v", *kubeconfig, err)
		}
		client, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), *timeout)
		defer cancel()
		comm := *processName
		if comm == "" {
			comm = name
		}
		applied := time.Now()
		verify := cpswap.All(
			cpswap.ProcessStartedSince(comm, applied, time.Second),
			cpswap.HealthAndLease(url, client, namespace, name, applied, 2*time.Second),
		)
		backup, err := swapper.Apply(ctx, *manifest, change, verify)
		if err != nil {
			return err
		}
		fmt.Printf("applied and verified %s (backup %s; undo with: cpswap rollback --manifest %s --backup-dir %s)\n",
			*manifest, backup, *manifest, filepath.Dir(backup))
		return nil
	case "rollback":
		backup, err := swapper.Rollback(*manifest)
		if err != nil {
			return err
		}
		fmt.Printf("restored %s from %s\n", *manifest, backup)
		return nil
	default:
		return fmt.Errorf("unknown command (want plan, apply or rollback)")
	}
}

package haupgrade

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idc-lts/kube-1.17/test/harness"
	"github.com/idc-lts/kube-1.17/test/kubeadmnode"
	figs "github.com/idc-lts/kube-1.17/test/regression/ha/figures"
)

// settle is how long the observer keeps watching after the last step: a handover a step set off
// may come after its block returned (a Lease left to expire). Each other step's figures run to
// the next step's start, so such a handover counts for the step after it.
const settle = 30 * time.Second

// blockTimeout bounds one pasted block: three cpswap applies of at most 3 minutes each, and room.
const blockTimeout = 15 * time.Minute

// handoverTarget is the longest a planned handover between our instances may leave a component
// without a leader: the leader releases its Lease on SIGTERM (patch 0028) and a standby of ours
// takes it at its next try, at most 1.25 retry periods (2.5 s, patch 0030) later.
const handoverTarget = 3 * time.Second

// lagTolerance is how much the upgrade's Endpoints lag p99 may exceed the baseline's: the
// retry period, the granularity with which a standby notices that a lease expired. Both rolls
// stop stock leaders, each of which costs a lease; what the upgrade may not do is cost more.
const lagTolerance = 2 * time.Second

// step is one block pasted on one master, and when.
type step struct {
	name, master string
	start, end   time.Time
}

// TestHAUpgrade: docs/operations.md's blocks as written, on each master in turn (before, then
// apply: stock -> ours), then the rollback block on each; throughout, an observer samples both
// elected components' locks and a client reads and writes through the load balancer. Each step's
// figures: the longest time without a leader of each component, samples with two leaders (must be
// none), the client's failed requests, the step's wall time.
func TestHAUpgrade(t *testing.T) {
	kubeadmnode.ClaimMachine(t)
	// The operator's path, as test/e2e takes it: the release cut for their registry, published
	// and signed there, each master's kubelet pulling it by digest.
	registry, release, verifyKey := harness.PublishedRelease(t, "ha-upgrade-key-password")
	if out, err := exec.Command("cp", verifyKey, filepath.Join(release, "cosign.pub")).CombinedOutput(); err != nil {
		t.Fatalf("setup: %v\n%s", err, out)
	}
	blocks := harness.OperatorBlocks(t)
	before, apply, rollback := blocks[0], blocks[1], blocks[2]

	c := startCluster(t, registry)
	obs, err := startObserver(c.config, c.masters, 500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	w, err := startWorkload(ctx, c.config, c.masters)
	if err != nil {
		obs.Stop()
		t.Fatalf("setup: the workload: %v", err)
	}
	var steps []step
	defer func() {
		time.Sleep(settle)
		obs.Stop()
		w.Stop()
		report(t, obs, w, steps)
	}()
	run := func(name string, m *kubeadmnode.Node, block string) {
		s := step{name: name, master: m.Name, start: time.Now()}
		code, out := c.paste(t, m, release, registry, len(steps)+1, name, block)
		s.end = time.Now()
		steps = append(steps, s)
		if code != 0 {
			t.Fatalf("%s on %s: exit code %d\n%s", name, m.Name, code, out)
		}
	}
	// The baseline, in the same run: each master's three components restarted in the apply
	// block's order, stock to stock (only their -v changes). Each roll takes the masters in the
	// order docs/operations.md gives: those whose instances lead nothing first.
	for _, m := range leadersLast(t, c) {
		run("restart", m, restartBlock)
	}
	for _, m := range leadersLast(t, c) {
		run("before", m, before)
		run("apply", m, apply)
	}
	// The rollback the other way round: the leaders' masters first, whose instances of ours
	// hand their Leases to standbys of ours (the handovers the 3 s target judges). The last
	// master's hands them from ours to stock, whatever the order.
	for _, m := range slices.Backward(leadersLast(t, c)) {
		run("rollback", m, rollback)
	}
}

// leadersLast orders the masters as docs/operations.md does: first those whose instances lead
// neither component, then the kube-scheduler leader's, then the kube-controller-manager
// leader's. A stock leader that stops costs its Lease's duration, and may hand the Lease to a
// stock standby on a master still to come, which stops in turn; this order leaves the fewest
// such masters (with the leaders on two masters, the first one's Lease can still go to the
// second).
func leadersLast(t *testing.T, c *cluster) []*kubeadmnode.Node {
	rank := map[string]int{}
	for i, component := range []string{"kube-scheduler", "kube-controller-manager"} {
		lease, err := harness.LeaseLock(context.Background(), c.client, component)
		if err != nil || lease.Holder == "" {
			t.Fatalf("the %s Lease: held by %q (%v), want a holder to order the masters by", component, lease.Holder, err)
		}
		rank[master(lease.Holder)] = i + 1
	}
	ordered := append([]*kubeadmnode.Node(nil), c.masters...)
	sort.SliceStable(ordered, func(i, j int) bool { return rank[ordered[i].Name] < rank[ordered[j].Name] })
	return ordered
}

// restartBlock restarts a master's three components in the apply block's order with nothing
// changed but their log level: the stock -> stock roll the upgrade is measured against.
// kube-apiserver's manifest gets --v=3 by hand (cpswap sets flags of the other two only), written
// beside it under a name the kubelet skips and moved over it; then this master's apiserver is
// waited for as the rollback block waits for it.
const restartBlock = `(
  set -o errexit -o nounset -o pipefail
  m=$MANIFESTS/kube-apiserver.yaml since=$(date +%s)
  sed 's/^\( *\)- kube-apiserver$/&\n\1- --v=3/' "$m" > "$MANIFESTS/.kube-apiserver.yaml.tmp"
  mv "$MANIFESTS/.kube-apiserver.yaml.tmp" "$m"
  addr=$(sed -n 's/^ *- --advertise-address=//p' "$m" | tail -n 1)
  ready=0
  for _ in $(seq 90); do
    started=$(bin/linux-amd64/cpswap status --manifest "$m" --backup-dir "$BACKUP_DIR" | sed -n 's/^process: *pid [0-9]*, started \([^ ]*\).*/\1/p')
    if [ -n "$started" ] && [ "$(date -d "$started" +%s)" -ge "$since" ]; then
      kubectl --kubeconfig "$KUBECONFIG" --server "https://$addr:6443" get --raw /readyz >/dev/null 2>&1 && ready=1 && break
    fi
    sleep 2
  done
  [ "$ready" = 1 ] || { echo "kube-apiserver: not restarted and ready after 3 minutes" >&2; exit 1; }
  for c in kube-controller-manager kube-scheduler; do
    bin/linux-amd64/cpswap apply --manifest "$MANIFESTS/$c.yaml" --flag=--v=3 --node-name "$NODE_NAME" \
      --backup-dir "$BACKUP_DIR" --kubeconfig "$KUBECONFIG" --timeout 3m
  done
)
`

// paste runs block as an operator pastes it on master m: in m's namespaces (its processes, its
// hostname, its components' health ports on loopback), from the release directory, with the
// master's paths, the test's registry and m's Node through the variables the blocks read.
func (c *cluster) paste(t *testing.T, m *kubeadmnode.Node, release string, registry *harness.Registry, n int, name, block string) (int, string) {
	backups := m.Path("var/lib/cpswap/backups")
	if err := os.MkdirAll(backups, 0o700); err != nil {
		t.Fatal(err)
	}
	cmd, err := m.Command("bash", "-c", block)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Dir = release
	cmd.Env = append(os.Environ(),
		"MANIFESTS="+m.Path("etc/kubernetes/manifests"), "KUBECONFIG="+m.Path("etc/kubernetes/admin.conf"),
		"BACKUP_DIR="+backups, "NODE_NAME="+m.Name, "REGISTRY="+registry.Host+"/idc-lts", "CA="+registry.CAFile,
		"PATH="+filepath.Dir(harness.Binary(t, "stock", "kubectl"))+":"+os.Getenv("PATH"))
	// A block that hangs is killed long before go test's own timeout, whose panic would skip the
	// cleanups that tear the cluster down.
	var killed atomic.Bool
	timer := time.AfterFunc(blockTimeout, func() {
		if cmd.Process != nil {
			killed.Store(true)
			_ = cmd.Process.Kill()
		}
	})
	out, err := cmd.CombinedOutput()
	timer.Stop()
	if killed.Load() {
		out = append(out, fmt.Sprintf("\n(killed after %v)\n", blockTimeout)...)
	}
	_ = os.WriteFile(filepath.Join(m.LogDir, fmt.Sprintf("%02d-%s.log", n, name)), []byte(block+"\n"+string(out)), 0o644)
	if cmd.ProcessState == nil {
		return -1, err.Error()
	}
	return cmd.ProcessState.ExitCode(), string(out)
}

// report logs each step's figures as a table and writes them to ha-upgrade.tsv in the test's log
// directory (make ha-upgrade-figures renders it into docs/ha.md), one line per step and one per
// kind of step over the whole roll. It fails the test on a sample with two leaders, on a
// handover between our instances that left a component without a leader for longer than
// handoverTarget, and on an upgrade whose Endpoints lag p99 is worse than the baseline's by more
// than lagTolerance.
func report(t *testing.T, obs *observer, w *workload, steps []step) {
	if len(steps) == 0 {
		return
	}
	var tsv strings.Builder
	// line writes one line of the table: the observer's figures f and the Endpoints lags of a
	// step, or of a kind of step over the roll.
	line := func(name, master string, f figures, lags []time.Duration, wall time.Duration, more []string) {
		kcm, kcmN := f.noLeader("kube-controller-manager")
		sched, schedN := f.noLeader("kube-scheduler")
		fields := []string{name, master,
			figs.Field("wall", fmt.Sprintf("%.1fs", wall.Seconds())),
			figs.Field("kcm no leader (handovers)", fmt.Sprintf("%.1fs (%d)", kcm.Seconds(), kcmN)),
			figs.Field("scheduler no leader (handovers)", fmt.Sprintf("%.1fs (%d)", sched.Seconds(), schedN)),
			figs.Field("dual leaders", fmt.Sprint(len(f.duals))),
			figs.Field("Endpoints lag p50/p99/max (n)", fmt.Sprintf("%.1fs/%.1fs/%.1fs (%d)",
				quantile(lags, 0.5).Seconds(), quantile(lags, 0.99).Seconds(), quantile(lags, 1).Seconds(), len(lags))),
			figs.Field("client failed/requests", fmt.Sprintf("%d/%d", f.failed, f.requests)),
		}
		tsv.WriteString(strings.Join(append(fields, more...), "\t") + "\n")
	}
	// A step's figures run to the next step's start, the last one's for settle after it.
	until := func(i int) time.Time {
		if i+1 < len(steps) {
			return steps[i+1].start
		}
		return steps[i].end.Add(settle)
	}
	for i, s := range steps {
		f := obs.between(s.start, until(i))
		var handovers []string
		for _, h := range f.handovers {
			handovers = append(handovers, h.String())
			if h.released && h.successor == "ours" && h.noLeader() > handoverTarget {
				t.Errorf("%s on %s: %s: a handover between our instances left no leader for longer than %v", s.name, s.master, h, handoverTarget)
			}
		}
		line(s.name, s.master, f, w.lags(s.start, until(i)), s.end.Sub(s.start), handovers)
		for _, d := range f.duals {
			t.Errorf("TWO LEADERS during %s on %s at %s: %s on %s each reported leading", s.name, s.master,
				d.at.Format("15:04:05.000"), d.component, strings.Join(d.masters, " and "))
		}
		if f.firstFailure != nil {
			t.Logf("%s on %s: the client's first failure: %v", s.name, s.master, f.firstFailure)
		}
	}
	// Each kind of step over the whole roll: the baseline's restarts, the upgrade (its before
	// and apply blocks), the rollbacks.
	p99 := map[string]time.Duration{}
	for _, kind := range []struct{ step, all string }{{"restart", "all restarts"}, {"apply", "all applies"}, {"rollback", "all rollbacks"}} {
		var from, to time.Time
		for i, s := range steps {
			if s.name == kind.step || (kind.step == "apply" && s.name == "before") {
				if from.IsZero() {
					from = s.start
				}
				to = until(i)
			}
		}
		if from.IsZero() {
			continue
		}
		lags := w.lags(from, to)
		line(kind.all, "-", obs.between(from, to), lags, to.Sub(from), nil)
		p99[kind.step] = quantile(lags, 0.99)
	}
	if p99["apply"] > p99["restart"]+lagTolerance {
		t.Errorf("the upgrade's Endpoints lag p99 %.1fs is worse than the stock restart roll's %.1fs by more than %v",
			p99["apply"].Seconds(), p99["restart"].Seconds(), lagTolerance)
	}
	table, err := figs.Upgrade.Table(tsv.String())
	if err != nil {
		t.Error(err)
	}
	t.Logf("the roll, step by step:\n%s", table)
	if err := os.WriteFile(filepath.Join(harness.LogDir(t), "ha-upgrade.tsv"), []byte(tsv.String()), 0o644); err != nil {
		t.Error(err)
	}
}

package standbyfields

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/idc-lts/kube-1.17/test/tier"
)

// patchedTree is the patched worktree that make build checks out (checkout_variant in
// build/lib.sh): <repository>/_output/work/patched, or $OUTPUT_DIR/work/patched.
func patchedTree(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	repo := filepath.Join(filepath.Dir(file), "..", "..")
	out := os.Getenv("OUTPUT_DIR")
	switch {
	case out == "":
		out = filepath.Join(repo, "_output")
	case !filepath.IsAbs(out):
		out = filepath.Join(repo, out)
	}
	dir := filepath.Join(out, "work", "patched")
	if _, err := os.Stat(filepath.Join(dir, "pkg", "controller", "endpoint", "standby_pods.go")); err != nil {
		tier.Missing(t, "run 'make build'", "no patched tree with patch 0031 at %s", dir)
	}
	return dir
}

// TestTheEndpointControllerReadsOnlyWhatTheStandbyKeeps is patch 0031's allow-list check: no
// function the endpoint controller can reach reads a pod field that trimPod drops. If this fails
// after a backport, either trimPod keeps the field too (and its comment says why) or the
// backport reads something else.
func TestTheEndpointControllerReadsOnlyWhatTheStandbyKeeps(t *testing.T) {
	r, err := Check(patchedTree(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, read := range r.Dropped {
		t.Errorf("%s reads %s at %s, which the standby's pod cache drops (trimPod in %s/standby_pods.go)", read.Func, read.Field, read.Pos, ControllerPackage)
	}
	// The check must have looked: the reads the controller is known to make, each kept.
	fields := map[string]bool{}
	for _, read := range r.Reads {
		fields[read.Field.String()] = true
	}
	for _, want := range []string{"ObjectMeta.Labels", "ObjectMeta.DeletionTimestamp", "PodSpec.NodeName", "PodSpec.Hostname",
		"PodStatus.PodIPs", "PodCondition.Status", "Container.Ports", "ContainerPort.ContainerPort"} {
		if !fields[want] {
			t.Errorf("found no read of %s among the %d reads of %d reachable functions: the check does not see what the controller reads", want, len(r.Reads), r.Functions)
		}
	}
	t.Logf("%d reachable functions, %d reads of %d distinct pod fields; trimPod keeps %d fields and %d types whole",
		r.Functions, len(r.Reads), len(fields), len(r.Kept), len(r.Whole))
}

// TestTheCheckNamesEachReadOfADroppedField: the controller changed as a careless backport would,
// through an overlay of the patched tree: a pod's annotation read directly and through its
// getter, a condition's reason, and a helper of another package that reads the pod's priority.
// Each is named; reading a Service's annotations is not a pod's read.
func TestTheCheckNamesEachReadOfADroppedField(t *testing.T) {
	tree := patchedTree(t)
	controller := filepath.Join(tree, "pkg", "controller", "endpoint", "endpoints_controller.go")
	podutil := filepath.Join(tree, "pkg", "api", "v1", "pod", "util.go")
	overlay := map[string][]byte{}
	// edit puts insert after the first anchor in path.
	edit := func(path, anchor, insert string) {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(src), anchor) {
			t.Fatalf("%s has no %q to change", path, anchor)
		}
		overlay[path] = []byte(strings.Replace(string(src), anchor, anchor+insert, 1))
	}
	edit(controller, "func (e *EndpointController) syncService(key string) error {\n", `
	if pod, _ := e.podLister.Pods("").Get(key); pod != nil {
		_ = pod.Annotations["backport"]
		_ = pod.GetAnnotations()
		for _, c := range pod.Status.Conditions {
			_ = c.Reason
		}
		_ = podutil.PriorityOf(pod)
	}
	if svc, _ := e.serviceLister.Services("").Get(key); svc != nil {
		_ = svc.Annotations["a Service's annotation"]
	}
`)
	podutilSrc, err := os.ReadFile(podutil)
	if err != nil {
		t.Fatal(err)
	}
	overlay[podutil] = append(podutilSrc, `
// PriorityOf is a careless backport's helper.
func PriorityOf(pod *v1.Pod) int32 {
	if pod.Spec.Priority == nil {
		return 0
	}
	return *pod.Spec.Priority
}
`...)
	r, err := Check(tree, overlay)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, read := range r.Dropped {
		got = append(got, read.Func+" "+read.Field.String())
	}
	want := []string{
		"k8s.io/kubernetes/pkg/controller/endpoint.EndpointController.syncService ObjectMeta.Annotations",
		"k8s.io/kubernetes/pkg/controller/endpoint.EndpointController.syncService ObjectMeta.Annotations",
		"k8s.io/kubernetes/pkg/controller/endpoint.EndpointController.syncService PodCondition.Reason",
		"k8s.io/kubernetes/pkg/api/v1/pod.PriorityOf PodSpec.Priority",
		"k8s.io/kubernetes/pkg/api/v1/pod.PriorityOf PodSpec.Priority",
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("reads of dropped fields:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Package garbagecollector is the regression suite for kube-controller-manager's controllers that
// follow every resource discovery lists when a custom resource's definition is deleted and
// re-created under the same name, as operators do when they re-install an operator: the garbage
// collector and the resource quota controller, through the shared metadata informers, and the
// namespace controller, through the metadata client (patch 0019).
// With patch 0006 but not 0019, the informer of the re-created resource relisted at the last
// resourceVersion it had seen, paged by cache.ListWatch's own pager; a 1.17 apiserver answers a
// limited list at a resourceVersion from etcd at exactly that old revision, so the informer got
// the state from before the re-creation, watched from it, was refused (410), and relisted the same
// history every second until etcd compacted it: the controllers did not see the new objects.
// Upstream's own integration test TestCRDDeletionCascading (test/integration/garbagecollector)
// runs the collector's side in-process (make test runs it); this suite runs the built
// kube-controller-manager against the stock kube-apiserver, as our users do.
package garbagecollector

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/idc-lts/kube-1.17/test/harness"
)

const (
	namespace = "crd-recreated"
	group     = "gc.idc-lts.test"
	plural    = "widgets"
	// collectTimeout bounds how long the collector may take to delete a dependent whose owner is
	// gone (upstream's test waits 60 s).
	collectTimeout = 60 * time.Second
)

var widgets = schema.GroupVersionResource{Group: group, Version: "v1", Resource: plural}

// cluster is a stock control plane with the build under test's kube-controller-manager running
// the controllers of args.
type cluster struct {
	cp        *harness.ControlPlane
	kcm       *harness.Component
	crds      apiextensionsclient.Interface
	resources dynamic.Interface
}

func startCluster(t *testing.T, variant string, args ...string) *cluster {
	t.Helper()
	cp := harness.StartControlPlane(t)
	if _, err := cp.Client.CoreV1().Namespaces().Create(&v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
		t.Fatal(err)
	}
	kcm := harness.StartComponent(t, cp, harness.ComponentOptions{Variant: variant, Args: append([]string{"--leader-elect=false"}, args...)})
	return &cluster{
		cp:        cp,
		kcm:       kcm,
		crds:      apiextensionsclient.NewForConfigOrDie(cp.Config),
		resources: dynamic.NewForConfigOrDie(cp.Config),
	}
}

// createDefinition creates the namespaced Widget definition and waits until it is served.
func (c *cluster) createDefinition(t *testing.T) {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: boolPtr(true)}},
			}},
		},
	}
	if _, err := c.crds.ApiextensionsV1().CustomResourceDefinitions().Create(crd); err != nil {
		t.Fatalf("creating %s: %v", crd.Name, err)
	}
	err := wait.PollImmediate(100*time.Millisecond, 30*time.Second, func() (bool, error) {
		_, err := c.resources.Resource(widgets).Namespace(namespace).List(metav1.ListOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("%s not served within 30 s: %v", crd.Name, err)
	}
}

// deleteDefinition deletes the definition (and with it every Widget) and waits until it is gone.
func (c *cluster) deleteDefinition(t *testing.T) {
	t.Helper()
	name := plural + "." + group
	if err := c.crds.ApiextensionsV1().CustomResourceDefinitions().Delete(name, &metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting %s: %v", name, err)
	}
	err := wait.PollImmediate(100*time.Millisecond, 60*time.Second, func() (bool, error) {
		_, err := c.crds.ApiextensionsV1().CustomResourceDefinitions().Get(name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("%s not gone within 60 s: %v", name, err)
	}
}

func (c *cluster) createWidget(t *testing.T, name string) *unstructured.Unstructured {
	t.Helper()
	widget := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": group + "/v1", "kind": "Widget",
		"metadata": map[string]interface{}{"name": name, "namespace": namespace},
	}}
	created, err := c.resources.Resource(widgets).Namespace(namespace).Create(widget, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating Widget %s: %v", name, err)
	}
	return created
}

// createDependent creates a ConfigMap owned by owner.
func (c *cluster) createDependent(t *testing.T, name string, owner *unstructured.Unstructured) {
	t.Helper()
	_, err := c.cp.Client.CoreV1().ConfigMaps(namespace).Create(&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: name,
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion: owner.GetAPIVersion(), Kind: owner.GetKind(), Name: owner.GetName(), UID: owner.GetUID()}},
	}})
	if err != nil {
		t.Fatalf("creating ConfigMap %s: %v", name, err)
	}
}

// waitFollowing waits until the collector follows Widgets (want true) or no longer does (false),
// as its syncs with discovery say (it looks at discovery every 30 s).
func (c *cluster) waitFollowing(t *testing.T, want bool) {
	t.Helper()
	err := wait.PollImmediate(200*time.Millisecond, 90*time.Second, func() (bool, error) {
		if exited, err := c.kcm.Exited(); exited {
			return false, fmt.Errorf("kube-controller-manager exited: %v", err)
		}
		return c.following() == want, nil
	})
	if err != nil {
		t.Fatalf("the garbage collector's monitors did not %s %s within 90 s: %v\n%s", map[bool]string{true: "add", false: "remove"}[want], widgets, err, c.kcm.Tail(20))
	}
}

// following tells whether the collector's monitors follow Widgets, from its log: each line
// "syncing garbage collector with updated resources from discovery (attempt 1): added: [...],
// removed: [...]" takes effect with the "synced garbage collector" that follows it.
func (c *cluster) following() bool {
	follows, pending := false, false
	name := fmt.Sprintf("%+v", widgets)
	for _, line := range c.kcm.LogLines("garbage collector") {
		if strings.Contains(line, "syncing garbage collector with updated resources") {
			added, removed, _ := strings.Cut(line, "removed:")
			pending = follows
			if strings.Contains(added, name) {
				pending = true
			} else if strings.Contains(removed, name) {
				pending = false
			}
		} else if strings.Contains(line, "synced garbage collector") {
			follows = pending
		}
	}
	return follows
}

// The passes of crdCascades: how the Widget definition comes to exist before each.
var cascadePasses = []string{
	"a new definition",
	// As over an operator's re-installation: the collector stopped following Widgets first.
	// (Upstream's TestCRDDeletionCascading, which make test runs, re-creates it at once; so does
	// the quota scenario below.)
	"re-created after the collector stopped following Widgets",
}

// crdCascades runs upstream TestCRDDeletionCascading's scenario against variant: a Widget owns a
// ConfigMap, the Widget definition is deleted, and the collector must delete the ConfigMap; then
// again with the definition re-created under the same name. It returns the passes whose
// ConfigMap the collector left behind.
func crdCascades(t *testing.T, variant string) []string {
	c := startCluster(t, variant, "--controllers=garbagecollector")
	var failed []string
	for pass, how := range cascadePasses {
		c.waitFollowing(t, false)
		c.createDefinition(t)
		owner := c.createWidget(t, fmt.Sprintf("owner-%d", pass+1))
		dependent := fmt.Sprintf("dependent-%d", pass+1)
		c.createDependent(t, dependent, owner)
		// The collector watches Widgets before their definition goes: it finds an owner it never
		// watched only through its definition, which is gone by then (upstream's test waits a
		// discovery period for the same).
		c.waitFollowing(t, true)
		c.deleteDefinition(t)
		err := wait.PollImmediate(time.Second, collectTimeout, func() (bool, error) {
			_, err := c.cp.Client.CoreV1().ConfigMaps(namespace).Get(dependent, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		if err != nil {
			failed = append(failed, fmt.Sprintf("pass %d, %s (ConfigMap %s, owned by Widget %s %s)", pass+1, how, dependent, owner.GetName(), owner.GetUID()))
		}
	}
	return failed
}

// TestPatchedCollectsAfterTheDefinitionIsRecreated: every pass's dependent is collected.
func TestPatchedCollectsAfterTheDefinitionIsRecreated(t *testing.T) {
	t.Parallel()
	variant := harness.VariantUnderTest()
	if failed := crdCascades(t, variant); len(failed) > 0 {
		t.Errorf("%s: the garbage collector did not delete the dependents of deleted Widgets within %v in %s (of %d passes)",
			variant, collectTimeout, strings.Join(failed, ", "), len(cascadePasses))
	}
}

// TestStockCollectsAfterTheDefinitionIsRecreated: stock v1.17.3 collects them too; the suite's
// scenario is sound.
func TestStockCollectsAfterTheDefinitionIsRecreated(t *testing.T) {
	t.Parallel()
	if failed := crdCascades(t, "stock"); len(failed) > 0 {
		t.Errorf("stock: the garbage collector did not delete the dependents of deleted Widgets within %v in %s", collectTimeout, strings.Join(failed, ", "))
	}
}

// widgetCount is the quota's name for the number of Widgets in a namespace.
var widgetCount = v1.ResourceName("count/" + plural + "." + group)

// quotaCounts creates Widgets under a ResourceQuota that counts them, deletes their definition,
// re-creates it with other Widgets, and returns the count the quota controller of variant
// reports for them: want is what it should be.
func quotaCounts(t *testing.T, variant string) (used, want int64) {
	// The quota controller recalculates every quota every 10 s from its informers' caches.
	c := startCluster(t, variant, "--controllers=resourcequota", "--resource-quota-sync-period=10s")
	_, err := c.cp.Client.CoreV1().ResourceQuotas(namespace).Create(&v1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets"},
		Spec:       v1.ResourceQuotaSpec{Hard: v1.ResourceList{widgetCount: resource.MustParse("100")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	c.createDefinition(t)
	c.createWidget(t, "first")
	if got := c.waitUsed(t, 1, 90*time.Second); got != 1 {
		t.Fatalf("%s: the quota counts %d Widgets before the definition is re-created, want 1 (setup)", variant, got)
	}
	c.deleteDefinition(t)
	c.waitInformerSeesItGone(t)
	c.createDefinition(t)
	c.createWidget(t, "second")
	c.createWidget(t, "third")
	return c.waitUsed(t, 2, 60*time.Second), 2
}

// waitInformerSeesItGone waits until kube-controller-manager's informer of Widgets has found the
// resource gone: its watch ended and its lists fail, as over any re-installation that takes longer
// than a second.
func (c *cluster) waitInformerSeesItGone(t *testing.T) {
	t.Helper()
	const failedList = "Failed to list *v1.PartialObjectMetadata"
	err := wait.PollImmediate(200*time.Millisecond, 30*time.Second, func() (bool, error) {
		return c.kcm.CountLogLines(failedList) > 0, nil
	})
	if err != nil {
		t.Fatalf("kube-controller-manager did not log %q within 30 s of the definition's deletion", failedList)
	}
}

// waitUsed waits until the quota counts want Widgets and returns the last count it read.
func (c *cluster) waitUsed(t *testing.T, want int64, timeout time.Duration) int64 {
	t.Helper()
	used := int64(-1)
	_ = wait.PollImmediate(500*time.Millisecond, timeout, func() (bool, error) {
		quota, err := c.cp.Client.CoreV1().ResourceQuotas(namespace).Get("widgets", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if q, ok := quota.Status.Used[widgetCount]; ok {
			used = q.Value()
		}
		return used == want, nil
	})
	return used
}

// TestPatchedQuotaCountsARecreatedResource: the quota counts the Widgets created after their
// definition came back (the bug: the count stayed at the history the informer relisted).
func TestPatchedQuotaCountsARecreatedResource(t *testing.T) {
	t.Parallel()
	variant := harness.VariantUnderTest()
	if used, want := quotaCounts(t, variant); used != want {
		t.Errorf("%s: after the Widget definition was deleted and re-created, the quota counts %d Widgets for a minute, want %d: the controller manager's informer of the re-created resource does not see its objects", variant, used, want)
	}
}

// TestStockQuotaCountsARecreatedResource: so does stock v1.17.3; the scenario is sound.
func TestStockQuotaCountsARecreatedResource(t *testing.T) {
	t.Parallel()
	if used, want := quotaCounts(t, "stock"); used != want {
		t.Errorf("stock: after the Widget definition was deleted and re-created, the quota counts %d Widgets, want %d", used, want)
	}
}

func boolPtr(b bool) *bool { return &b }

// namespaceEmptied re-creates the Widget definition with a Widget in the namespace, deletes the
// namespace, and reports whether variant's namespace controller deleted it, Widgets and all,
// within a minute.
func namespaceEmptied(t *testing.T, variant string) bool {
	c := startCluster(t, variant, "--controllers=namespace")
	c.createDefinition(t)
	c.createWidget(t, "first")
	c.deleteDefinition(t)
	c.createDefinition(t)
	c.createWidget(t, "second")
	if err := c.cp.Client.CoreV1().Namespaces().Delete(namespace, &metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollImmediate(500*time.Millisecond, 60*time.Second, func() (bool, error) {
		_, err := c.cp.Client.CoreV1().Namespaces().Get(namespace, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		var left []string
		if list, err := c.resources.Resource(widgets).Namespace(namespace).List(metav1.ListOptions{}); err == nil {
			for _, widget := range list.Items {
				left = append(left, widget.GetName())
			}
		}
		t.Logf("%s: namespace %s still exists; Widgets in it: %v", variant, namespace, left)
		return false
	}
	return true
}

// TestPatchedDeletesANamespaceWithARecreatedResource: the namespace controller (which lists
// through the metadata client, not informers) deletes the re-created resource's objects.
func TestPatchedDeletesANamespaceWithARecreatedResource(t *testing.T) {
	t.Parallel()
	if variant := harness.VariantUnderTest(); !namespaceEmptied(t, variant) {
		t.Errorf("%s: a namespace holding a Widget whose definition was deleted and re-created was not deleted within 60 s", variant)
	}
}

// TestStockDeletesANamespaceWithARecreatedResource: so does stock v1.17.3; the scenario is sound.
func TestStockDeletesANamespaceWithARecreatedResource(t *testing.T) {
	t.Parallel()
	if !namespaceEmptied(t, "stock") {
		t.Errorf("stock: a namespace holding a Widget whose definition was deleted and re-created was not deleted within 60 s")
	}
}

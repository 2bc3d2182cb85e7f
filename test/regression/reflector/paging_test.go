package reflector

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/idc-lts/kube-1.17/test/harness"
)

// pagedServices is more than one page of a list (client-go's pager asks for 500 at a time).
const pagedServices = 600

// TestPatchedRelistsInPagesWithoutAWatchCache: with the apiserver's watch cache off
// (--watch-cache=false, or a resource whose cache is off), the first Services list comes back in
// pages, and a relist (its watch expired) goes to etcd as well. It must keep paging: 0006 and 0019
// ask for relists at a resourceVersion unpaged, so that a watch cache can serve them, and without
// one that is a read of every Service from etcd in one response. Stock 1.17.3 pages every list;
// 0040 (upstream 5dcf08c) pages relists when the first list came back in pages.
func TestPatchedRelistsInPagesWithoutAWatchCache(t *testing.T) {
	variant := harness.VariantUnderTest()
	cp := harness.StartControlPlane(t, "--watch-cache=false")
	client := cp.Client
	if _, err := client.CoreV1().Namespaces().Create(&v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, pagedServices)
	for i := 0; i < pagedServices; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			_, err := client.CoreV1().Services(namespace).Create(&v1.Service{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("svc-%d", i)},
				Spec:       v1.ServiceSpec{ClusterIP: v1.ClusterIPNone, Selector: map[string]string{"app": "x"}, Ports: []v1.ServicePort{{Name: "web", Port: 80}}},
			})
			if err != nil {
				errs <- err
			}
		}(i)
		if i%50 == 49 {
			wg.Wait()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	proxy := newFaultProxy(t, cp.URL)
	throughProxy := *cp
	throughProxy.Kubeconfig = harness.WriteKubeconfig(t, proxy.URL())
	harness.StartComponent(t, &throughProxy, harness.ComponentOptions{Variant: variant, Args: []string{
		"--controllers=endpoint", "--leader-elect=false", "--kube-api-content-type=application/json"}})
	if err := wait.PollImmediate(100*time.Millisecond, time.Minute, func() (bool, error) {
		_, watches := proxy.requests()
		return len(watches) > 0, nil
	}); err != nil {
		t.Fatalf("kube-controller-manager never watched Services; lists: %q", proxy.lists())
	}
	first := proxy.lists()
	if len(first) < 2 || !strings.Contains(first[0], "resourceVersion=0 limit=500") {
		t.Fatalf("the first Services list was not paged (without a watch cache, %d Services, 500 a page): %q", pagedServices, first)
	}

	proxy.expireServicesWatches()
	var relist []string
	if err := wait.PollImmediate(100*time.Millisecond, time.Minute, func() (bool, error) {
		relist = proxy.lists()[len(first):]
		_, watches := proxy.requests()
		return len(relist) > 0 && len(watches) > 1, nil
	}); err != nil {
		t.Fatalf("no relist and new watch after the watch expired; lists: %q", proxy.lists())
	}
	if !strings.Contains(relist[0], " limit=500 ") {
		t.Errorf("%s relisted every Service from etcd in one response (%s): without a watch cache a relist must keep paging", variant, relist[0])
	}
	t.Logf("first list: %q; relist after the watch expired: %q", first, relist)
}

// Package headless is the regression suite for the headless-label Endpoints churn (patch
// "endpoints: stop rewriting unchanged Endpoints on every resync").
package headless

import (
	"fmt"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
)

// Shape of a Service's Endpoints.
type Shape string

const (
	// SingleSubset: one Ready pod behind a numeric target port.
	SingleSubset Shape = "single"
	// MultiSubset: a named target port that the pods expose on different numbers, plus a
	// not-ready pod; the Endpoints have several subsets, which the apiserver re-sorts.
	MultiSubset Shape = "multi"
)

// podSpec is a pod of the fixture: the number its "web" port has and whether it is Ready.
type podSpec struct {
	port  int32
	ready bool
}

var podsOf = map[Shape][]podSpec{
	SingleSubset: {{port: 8080, ready: true}},
	MultiSubset:  {{port: 8080, ready: true}, {port: 8081, ready: true}, {port: 8080, ready: false}},
}

// ServiceFixture is one headless Service and its pods.
type ServiceFixture struct {
	Name  string
	Shape Shape
	// PodIPs maps pod name to IP.
	PodIPs map[string]string
}

// CreateServices creates n headless Services in namespace, alternating the shapes, each with
// pods whose status says Running (and Ready or not, as the shape wants), using parallel clients.
func CreateServices(t *testing.T, client kubernetes.Interface, namespace string, n int) []ServiceFixture {
	t.Helper()
	if _, err := client.CoreV1().Namespaces().Create(&v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
		t.Fatal(err)
	}
	fixtures := make([]ServiceFixture, n)
	for i := range fixtures {
		shape := SingleSubset
		if i%2 == 1 {
			shape = MultiSubset
		}
		fixtures[i] = ServiceFixture{Name: fmt.Sprintf("%s-%d", shape, i), Shape: shape, PodIPs: map[string]string{}}
		for j := range podsOf[shape] {
			// 10.<i/250+1>.<i%250>.<j+1>: unique per pod, far from the Service CIDR.
			fixtures[i].PodIPs[fmt.Sprintf("%s-%d", fixtures[i].Name, j)] = fmt.Sprintf("10.%d.%d.%d", 100+i/250, i%250, j+1)
		}
	}

	const workers = 16
	errs := make(chan error, n)
	work := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				if err := createService(client, namespace, fixtures[i]); err != nil {
					errs <- err
				}
			}
		}()
	}
	for i := range fixtures {
		work <- i
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return fixtures
}

func createService(client kubernetes.Interface, namespace string, f ServiceFixture) error {
	selector := map[string]string{"service": f.Name}
	port := v1.ServicePort{Name: "web", Port: 80, Protocol: v1.ProtocolTCP, TargetPort: intstr.FromInt(8080)}
	if f.Shape == MultiSubset {
		port.TargetPort = intstr.FromString("web")
	}
	service := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: f.Name, Labels: map[string]string{"app": f.Name, "suite": "headless"}},
		Spec: v1.ServiceSpec{
			ClusterIP: v1.ClusterIPNone,
			Selector:  selector,
			Ports:     []v1.ServicePort{port},
		},
	}
	if _, err := client.CoreV1().Services(namespace).Create(service); err != nil {
		return fmt.Errorf("creating service %s: %v", f.Name, err)
	}
	for j, spec := range podsOf[f.Shape] {
		name := fmt.Sprintf("%s-%d", f.Name, j)
		pod := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: selector},
			// Endpoints addresses carry the pod's node; the node need not exist.
			Spec: v1.PodSpec{NodeName: "node-1", Containers: []v1.Container{{
				Name:  "web",
				Image: "web:1",
				Ports: []v1.ContainerPort{{Name: "web", ContainerPort: spec.port, Protocol: v1.ProtocolTCP}},
			}}},
		}
		created, err := client.CoreV1().Pods(namespace).Create(pod)
		if err != nil {
			return fmt.Errorf("creating pod %s: %v", name, err)
		}
		ready := v1.ConditionFalse
		if spec.ready {
			ready = v1.ConditionTrue
		}
		// No kubelet runs here: the test reports the status a kubelet would.
		created.Status = v1.PodStatus{
			Phase:      v1.PodRunning,
			PodIP:      f.PodIPs[name],
			PodIPs:     []v1.PodIP{{IP: f.PodIPs[name]}},
			Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: ready}},
		}
		if _, err := client.CoreV1().Pods(namespace).UpdateStatus(created); err != nil {
			return fmt.Errorf("setting status of pod %s: %v", name, err)
		}
	}
	return nil
}

// WantAddresses is the number of ready and not-ready addresses a fixture's Endpoints should have.
func (f ServiceFixture) WantAddresses() (ready, notReady int) {
	for _, p := range podsOf[f.Shape] {
		if p.ready {
			ready++
		} else {
			notReady++
		}
	}
	return ready, notReady
}

// CountAddresses counts the ready and not-ready addresses of Endpoints.
func CountAddresses(ep *v1.Endpoints) (ready, notReady int) {
	for _, s := range ep.Subsets {
		ready += len(s.Addresses)
		notReady += len(s.NotReadyAddresses)
	}
	return ready, notReady
}

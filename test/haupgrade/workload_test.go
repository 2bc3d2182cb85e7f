package haupgrade

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/idc-lts/kube-1.17/test/kubeadmnode"
)

const (
	workloadNamespace = "ha-workload"
	// replicas of the workload's Deployment, spread over the three masters.
	replicas = 6
	// churnEvery is how often the workload deletes one of its pods (its ReplicaSet makes another).
	churnEvery = 5 * time.Second
)

// deletion is one pod the workload deleted: when, and when its address left the headless
// Service's Endpoints (zero while it is still there).
type deletion struct {
	pod           string
	deleted, gone time.Time
}

// workload is a Deployment of pause pods (hostNetwork: the masters have no pod network) behind a
// headless and a ClusterIP Service, one pod deleted every churnEvery while it runs, and a probe of
// how long each deleted pod stays in the headless Service's Endpoints.
type workload struct {
	client    kubernetes.Interface
	mu        sync.Mutex
	deletions map[types.UID]*deletion
	stop      context.CancelFunc
	done      sync.WaitGroup
}

// startWorkload lets pods run on the masters (kubeadm's control-plane taint removed), creates the
// Services and the Deployment through config, waits until the Endpoints list every replica, then
// starts the churn and the probe.
func startWorkload(ctx context.Context, config *rest.Config, masters []*kubeadmnode.Node) (*workload, error) {
	config = rest.CopyConfig(config)
	config.Timeout = 10 * time.Second
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	for _, m := range masters {
		node, err := client.CoreV1().Nodes().Get(m.Name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		node.Spec.Taints = nil
		if _, err := client.CoreV1().Nodes().Update(node); err != nil {
			return nil, err
		}
	}
	if _, err := client.CoreV1().Namespaces().Create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: workloadNamespace}}); err != nil {
		return nil, err
	}
	labels := map[string]string{"app": "web"}
	port := []corev1.ServicePort{{Name: "web", Port: 80, TargetPort: intstr.FromInt(8080)}}
	for _, svc := range []*corev1.Service{
		{ObjectMeta: metav1.ObjectMeta{Name: "web-headless"}, Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: labels, Ports: port}},
		{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.ServiceSpec{Selector: labels, Ports: port}},
	} {
		if _, err := client.CoreV1().Services(workloadNamespace).Create(svc); err != nil {
			return nil, err
		}
	}
	n, grace := int32(replicas), int64(1)
	deployment := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: appsv1.DeploymentSpec{
		Replicas: &n, Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
			HostNetwork: true, TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{Name: "pause", Image: "k8s.gcr.io/pause:3.1", ImagePullPolicy: corev1.PullNever}},
		}},
	}}
	if _, err := client.AppsV1().Deployments(workloadNamespace).Create(deployment); err != nil {
		return nil, err
	}
	err = kubeadmnode.WaitFor(ctx, time.Second, func() (bool, error) {
		uids, err := endpointPods(client)
		return err == nil && len(uids) == replicas, fmt.Errorf("web-headless lists %d pods (%v), want %d", len(uids), err, replicas)
	})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &workload{client: client, deletions: map[types.UID]*deletion{}, stop: cancel}
	w.done.Add(2)
	go func() {
		defer w.done.Done()
		for ctx.Err() == nil {
			w.deleteOne()
			sleep(ctx, churnEvery)
		}
	}()
	go func() {
		defer w.done.Done()
		for ctx.Err() == nil {
			w.probe()
			sleep(ctx, 250*time.Millisecond)
		}
	}()
	return w, nil
}

// endpointPods are the UIDs of the pods web-headless's Endpoints list, ready or not.
func endpointPods(client kubernetes.Interface) (map[types.UID]bool, error) {
	ep, err := client.CoreV1().Endpoints(workloadNamespace).Get("web-headless", metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	uids := map[types.UID]bool{}
	for _, subset := range ep.Subsets {
		for _, list := range [][]corev1.EndpointAddress{subset.Addresses, subset.NotReadyAddresses} {
			for _, a := range list {
				if a.TargetRef != nil {
					uids[a.TargetRef.UID] = true
				}
			}
		}
	}
	return uids, nil
}

// deleteOne deletes the workload's oldest running pod that it has not deleted yet. A request that
// fails (an apiserver restarting) is tried again at the next round.
func (w *workload) deleteOne() {
	pods, err := w.client.CoreV1().Pods(workloadNamespace).List(metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		return
	}
	sort.Slice(pods.Items, func(i, j int) bool { return pods.Items[i].CreationTimestamp.Before(&pods.Items[j].CreationTimestamp) })
	for _, pod := range pods.Items {
		w.mu.Lock()
		_, seen := w.deletions[pod.UID]
		w.mu.Unlock()
		if seen || pod.DeletionTimestamp != nil || pod.Status.Phase != corev1.PodRunning {
			continue
		}
		uid := pod.UID
		at := time.Now()
		if err := w.client.CoreV1().Pods(workloadNamespace).Delete(pod.Name, &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil {
			return
		}
		w.mu.Lock()
		w.deletions[uid] = &deletion{pod: pod.Name, deleted: at}
		w.mu.Unlock()
		return
	}
}

// probe marks each deleted pod whose UID the Endpoints no longer list as gone now.
func (w *workload) probe() {
	uids, err := endpointPods(w.client)
	if err != nil {
		return
	}
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	for uid, d := range w.deletions {
		if d.gone.IsZero() && !uids[uid] {
			d.gone = now
		}
	}
}

// Stop ends the churn and the probe.
func (w *workload) Stop() {
	w.stop()
	w.done.Wait()
}

// lags are the Endpoints lags of the pods deleted in [from, to), sorted; a pod still listed
// counts until now.
func (w *workload) lags(from, to time.Time) []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	var lags []time.Duration
	for _, d := range w.deletions {
		if d.deleted.Before(from) || !d.deleted.Before(to) {
			continue
		}
		gone := d.gone
		if gone.IsZero() {
			gone = time.Now()
		}
		lags = append(lags, gone.Sub(d.deleted))
	}
	sort.Slice(lags, func(i, j int) bool { return lags[i] < lags[j] })
	return lags
}

// quantile is the q-quantile of sorted lags (nearest rank), 0 for none.
func quantile(lags []time.Duration, q float64) time.Duration {
	if len(lags) == 0 {
		return 0
	}
	i := int(q*float64(len(lags))+0.5) - 1
	if i < 0 {
		i = 0
	}
	if i >= len(lags) {
		i = len(lags) - 1
	}
	return lags[i]
}

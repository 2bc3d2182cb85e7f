package diagnose

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/idc-lts/kube-1.17/test/harness"
)

// rbacFile is the release's RBAC for the check.
const rbacFile = "deploy/cpswap-diagnose.yaml"

// grant is one verb on one resource (or non-resource URL) a rule of rbacFile gives.
type grant struct{ namespace, group, resource, url, verb string }

// checkRBAC: every request the check made is allowed by rbacFile, and every grant in it was
// used: the file is what the check needs, no more.
func checkRBAC(t *testing.T, requests map[string]request) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(harness.RepoRoot(t), rbacFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range rbacProblems(raw, requests) {
		t.Error(p)
	}
}

// rbacProblems says what is wrong with an RBAC file for the requests: a request it does not
// allow, a grant no request used, a role not bound to the file's ServiceAccount.
func rbacProblems(raw []byte, requests map[string]request) []string {
	var problems []string
	grants := map[grant]bool{}
	// Each role must be bound to the file's ServiceAccount: kind/namespace/name -> bound.
	roles, account := map[string]bool{}, ""
	var bindings []string
	for _, doc := range strings.Split(string(raw), "\n---\n") {
		var kind struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name, Namespace string
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(doc), &kind); err != nil {
			return append(problems, fmt.Sprintf("%s: %v", rbacFile, err))
		}
		var rules []rbacv1.PolicyRule
		namespace := ""
		switch kind.Kind {
		case "ServiceAccount":
			account = "ServiceAccount/" + kind.Metadata.Namespace + "/" + kind.Metadata.Name
		case "ClusterRoleBinding", "RoleBinding":
			var b rbacv1.RoleBinding
			if err := yaml.UnmarshalStrict([]byte(doc), &b); err != nil {
				return append(problems, fmt.Sprintf("%s: %v", rbacFile, err))
			}
			for _, s := range b.Subjects {
				bindings = append(bindings, b.RoleRef.Kind+"/"+b.Namespace+"/"+b.RoleRef.Name+" to "+s.Kind+"/"+s.Namespace+"/"+s.Name)
			}
		case "ClusterRole":
			var r rbacv1.ClusterRole
			if err := yaml.UnmarshalStrict([]byte(doc), &r); err != nil {
				return append(problems, fmt.Sprintf("%s: %v", rbacFile, err))
			}
			rules = r.Rules
			roles["ClusterRole//"+r.Name] = false
		case "Role":
			var r rbacv1.Role
			if err := yaml.UnmarshalStrict([]byte(doc), &r); err != nil {
				return append(problems, fmt.Sprintf("%s: %v", rbacFile, err))
			}
			rules, namespace = r.Rules, r.Namespace
			roles["Role/"+r.Namespace+"/"+r.Name] = false
		}
		for _, rule := range rules {
			for _, verb := range rule.Verbs {
				for _, url := range rule.NonResourceURLs {
					grants[grant{url: url, verb: verb}] = false
				}
				for _, group := range rule.APIGroups {
					for _, resource := range rule.Resources {
						grants[grant{namespace: namespace, group: group, resource: resource, verb: verb}] = false
					}
				}
			}
		}
	}
	// A ClusterRoleBinding has no namespace and names a ClusterRole; a RoleBinding binds a Role of
	// its own namespace.
	for _, b := range bindings {
		role, subject, _ := strings.Cut(b, " to ")
		if _, ok := roles[role]; !ok || subject != account {
			problems = append(problems, fmt.Sprintf("%s binds %s, want each role bound to %s", rbacFile, b, account))
			continue
		}
		roles[role] = true
	}
	for role, bound := range roles {
		if !bound {
			problems = append(problems, fmt.Sprintf("%s: %s is bound to nothing", rbacFile, role))
		}
	}
	for _, r := range requests {
		// A ClusterRole's grant (namespace "") allows a request in any namespace; a Role's,
		// in its own.
		var candidates []grant
		if r.ObjectRef == nil {
			candidates = []grant{{url: strings.SplitN(r.RequestURI, "?", 2)[0], verb: r.Verb}}
		} else {
			g := grant{group: r.ObjectRef.APIGroup, resource: r.ObjectRef.Resource, verb: r.Verb}
			candidates = append(candidates, g)
			if r.ObjectRef.Namespace != "" {
				g.namespace = r.ObjectRef.Namespace
				candidates = append(candidates, g)
			}
		}
		allowed := false
		for _, g := range candidates {
			if _, ok := grants[g]; ok {
				grants[g], allowed = true, true
			}
		}
		if !allowed {
			problems = append(problems, fmt.Sprintf("%s does not allow the check's %s %s", rbacFile, r.Verb, r.RequestURI))
		}
	}
	for g, used := range grants {
		if !used {
			problems = append(problems, fmt.Sprintf("%s grants %+v, which the check never used", rbacFile, g))
		}
	}
	return problems
}

// TestRBACProblemsAreNamed: rbacProblems accepts the release's file for the requests the check
// makes (as the apiserver's audit log records them), and names each way a changed file is wrong.
func TestRBACProblemsAreNamed(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(harness.RepoRoot(t), rbacFile))
	if err != nil {
		t.Fatal(err)
	}
	req := func(verb, group, resource, namespace, uri string) request {
		r := request{Verb: verb, RequestURI: uri}
		if resource != "" {
			r.ObjectRef = &struct {
				APIGroup  string `json:"apiGroup"`
				Resource  string `json:"resource"`
				Namespace string `json:"namespace"`
			}{group, resource, namespace}
		}
		return r
	}
	checks := map[string]request{
		"1": req("list", "", "pods", "kube-system", "/api/v1/namespaces/kube-system/pods"),
		"2": req("get", "", "", "", "/version?timeout=30s"),
		"3": req("list", "", "endpoints", "", "/api/v1/endpoints"),
		"4": req("watch", "", "endpoints", "", "/api/v1/endpoints"),
		"5": req("list", "", "services", "", "/api/v1/services"),
		"6": req("watch", "", "services", "", "/api/v1/services"),
		"7": req("list", "coordination.k8s.io", "leases", "kube-system", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases"),
		"8": req("watch", "coordination.k8s.io", "leases", "kube-system", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases"),
	}
	if p := rbacProblems(raw, checks); len(p) != 0 {
		t.Fatalf("the release's file: %q", p)
	}
	for _, tc := range []struct{ name, old, new, want string }{
		{"a right missing", `resources: ["leases"]
  verbs: ["list", "watch"]`, `resources: ["leases"]
  verbs: ["list"]`, "does not allow the check's watch /apis/coordination.k8s.io/v1/namespaces/kube-system/leases"},
		{"a right too many", `verbs: ["list"]
- apiGroups: ["coordination.k8s.io"]`, `verbs: ["list", "get"]
- apiGroups: ["coordination.k8s.io"]`, "which the check never used"},
		{"pods cluster-wide, not in kube-system", `kind: Role
metadata:
  name: cpswap-diagnose
  namespace: kube-system`, `kind: Role
metadata:
  name: cpswap-diagnose
  namespace: default`, "does not allow the check's list /api/v1/namespaces/kube-system/pods"},
		{"bound to another account", `subjects:
- kind: ServiceAccount
  name: cpswap-diagnose
  namespace: kube-system
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role`, `subjects:
- kind: ServiceAccount
  name: default
  namespace: kube-system
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role`, "want each role bound to ServiceAccount/kube-system/cpswap-diagnose"},
	} {
		changed := strings.Replace(string(raw), tc.old, tc.new, 1)
		if changed == string(raw) {
			t.Fatalf("%s: %s has no %q", tc.name, rbacFile, tc.old)
		}
		p := rbacProblems([]byte(changed), checks)
		if !strings.Contains(strings.Join(p, "\n"), tc.want) {
			t.Errorf("%s: problems %q, want %q", tc.name, p, tc.want)
		}
	}
}

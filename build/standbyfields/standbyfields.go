// Package standbyfields checks patch 0031's allow-list. A standby kube-controller-manager's endpoint
// controller keeps of each pod only what trimPod (pkg/controller/endpoint/standby_pods.go) copies;
// a backport that made the controller read another field of a pod would read it empty, silently.
// Check reads the patched tree's source and compares the fields of a pod that trimPod keeps with
// those that the endpoint controller's package, and every function of the tree it can call, reads.
//
// What it sees: field selections (pod.Spec.NodeName, c.Ports) and the getters that a pod inherits
// from its ObjectMeta (pod.GetAnnotations()), on expressions of the pod's own types (Pod, PodSpec,
// PodStatus, Container, ...: the types of k8s.io/api/core/v1 a Pod is made of), in every function
// reachable by static calls and function references from the package. "Kept" means a field
// trimPod reads from the pod it trims; a field it reads only to filter by is counted as kept too:
// it keeps the Ready condition alone, so a backport that reads another condition (ContainersReady,
// PodScheduled) passes the check and finds nothing on a standby.
//
// What it does not see, so that a backport doing it has to be read: a read through an interface
// (a lister's GetPodServices, metav1.Object's getters after meta.Accessor, sort's Less), through
// reflection, in a function literal assigned to a package-level variable, or through a copy of a
// pod's ObjectMeta handed to a helper; a read by op-assignment or ++. It flags pod.Kind
// (TypeMeta), which trimPod leaves in place.
package standbyfields

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/tools/go/packages"
)

const (
	// ControllerPackage is the endpoint controller's package, whose functions are the roots.
	ControllerPackage = "k8s.io/kubernetes/pkg/controller/endpoint"
	// TrimFunc is the function of ControllerPackage that trims a pod for the standby's cache.
	TrimFunc = "trimPod"

	corev1 = "k8s.io/api/core/v1"
	metav1 = "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Field is a field of a struct type: Type is the type's name in its package (PodSpec, ObjectMeta).
type Field struct{ Type, Name string }

func (f Field) String() string { return f.Type + "." + f.Name }

// Read is one read of a pod's field.
type Read struct {
	Field
	// Func is the function that reads it (package-qualified), Pos where.
	Func string
	Pos  token.Position
}

// Result is what Check found.
type Result struct {
	// Kept are the fields trimPod copies from the pod it trims; Whole the types it copies whole
	// (it reads a field of that type and none of the type's own fields: ContainerPort).
	Kept  map[Field]bool
	Whole map[string]bool
	// Reads are the reads of a pod's fields by the functions reachable from the controller's
	// package; Dropped are those of fields trimPod does not keep.
	Reads, Dropped []Read
	// Functions is how many functions were reachable.
	Functions int
}

// Check loads ControllerPackage from the Kubernetes tree at dir (overlay replaces files' contents,
// by absolute path, as go/packages does) and compares what trimPod keeps with what is read.
func Check(dir string, overlay map[string][]byte) (*Result, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	cfg := &packages.Config{
		Mode: packages.NeedName | packages.NeedFiles | packages.NeedSyntax | packages.NeedTypes |
			packages.NeedTypesInfo | packages.NeedImports | packages.NeedDeps,
		Dir:     dir,
		Env:     append(os.Environ(), "GOFLAGS=-mod=readonly", "CGO_ENABLED=0"),
		Fset:    fset,
		Overlay: overlay,
		// Only the tree's own code can read a pod's fields on the controller's behalf: every
		// other file (the standard library, other modules, generated code) is type-checked
		// without its function bodies, which keeps the load to seconds.
		ParseFile: func(fset *token.FileSet, filename string, src []byte) (*ast.File, error) {
			f, err := parser.ParseFile(fset, filename, src, parser.SkipObjectResolution)
			if f != nil && !withBodies(dir, filename) {
				for _, decl := range f.Decls {
					if fd, ok := decl.(*ast.FuncDecl); ok {
						fd.Body = nil
					}
				}
			}
			return f, err
		},
	}
	roots, err := packages.Load(cfg, ControllerPackage)
	if err != nil {
		return nil, fmt.Errorf("loading %s from %s: %v", ControllerPackage, dir, err)
	}
	if len(roots) != 1 {
		return nil, fmt.Errorf("loading %s from %s: %d packages", ControllerPackage, dir, len(roots))
	}
	var loadErrs []string
	packages.Visit(roots, nil, func(p *packages.Package) {
		for _, e := range p.Errors {
			// A file parsed without its function bodies has imports it no longer uses and init
			// functions without a body: not errors of the code that is read.
			file, _, _ := strings.Cut(e.Pos, ":")
			if e.Pos == "" || withBodies(dir, file) {
				loadErrs = append(loadErrs, e.Error())
			}
		}
	})
	if len(loadErrs) > 0 {
		return nil, fmt.Errorf("type-checking %s in %s: %s", ControllerPackage, dir, strings.Join(loadErrs, "; "))
	}
	a := newAnalysis(roots[0])
	if a.pod == nil {
		return nil, fmt.Errorf("%s does not import %s.Pod", ControllerPackage, corev1)
	}
	trim := a.funcs[a.lookup(roots[0], TrimFunc)]
	if trim == nil {
		return nil, fmt.Errorf("%s has no function %s: the standby's pod cache is not trimmed (patch 0031)", ControllerPackage, TrimFunc)
	}
	r := &Result{Kept: map[Field]bool{}}
	for _, read := range a.reads(trim, false) {
		r.Kept[read.Field] = true
	}
	r.Whole = a.whole(r.Kept)
	reachable := a.reachable(roots[0])
	r.Functions = len(reachable)
	for _, fn := range reachable {
		r.Reads = append(r.Reads, a.reads(fn, true)...)
	}
	sort.Slice(r.Reads, func(i, j int) bool {
		if r.Reads[i].Field != r.Reads[j].Field {
			return r.Reads[i].Field.String() < r.Reads[j].Field.String()
		}
		return r.Reads[i].Pos.String() < r.Reads[j].Pos.String()
	})
	for _, read := range r.Reads {
		if !r.Kept[read.Field] && !r.Whole[read.Type] {
			r.Dropped = append(r.Dropped, read)
		}
	}
	return r, nil
}

// withBodies says whether a file's function bodies are kept: the tree's own, hand-written code.
func withBodies(dir, filename string) bool {
	rel, err := filepath.Rel(dir, filename)
	if err != nil || strings.HasPrefix(rel, "..") {
		return false
	}
	base := filepath.Base(filename)
	return !strings.HasPrefix(rel, filepath.Join("staging", "src", "k8s.io", "api")+string(filepath.Separator)) &&
		!strings.HasPrefix(base, "zz_generated") && !strings.HasSuffix(base, ".pb.go") && !strings.HasPrefix(base, "generated")
}

// function is a function declaration with its package's type information.
type function struct {
	name string
	decl *ast.FuncDecl
	info *types.Info
	fset *token.FileSet
}

type analysis struct {
	fset  *token.FileSet
	funcs map[*types.Func]*function
	// pod is core/v1's Pod; podTypes the named types of core/v1 a Pod is made of.
	pod      *types.Named
	podTypes map[*types.TypeName]bool
	meta     *types.Named
}

func newAnalysis(root *packages.Package) *analysis {
	a := &analysis{fset: root.Fset, funcs: map[*types.Func]*function{}, podTypes: map[*types.TypeName]bool{}}
	packages.Visit([]*packages.Package{root}, nil, func(p *packages.Package) {
		switch p.PkgPath {
		case corev1:
			if obj, ok := p.Types.Scope().Lookup("Pod").(*types.TypeName); ok {
				a.pod, _ = obj.Type().(*types.Named)
			}
		case metav1:
			if obj, ok := p.Types.Scope().Lookup("ObjectMeta").(*types.TypeName); ok {
				a.meta, _ = obj.Type().(*types.Named)
			}
		}
		if p.TypesInfo == nil {
			return
		}
		for _, file := range p.Syntax {
			for _, decl := range file.Decls {
				fd, ok := decl.(*ast.FuncDecl)
				if !ok || fd.Body == nil {
					continue
				}
				if obj, ok := p.TypesInfo.Defs[fd.Name].(*types.Func); ok {
					a.funcs[obj] = &function{name: funcName(obj), decl: fd, info: p.TypesInfo, fset: p.Fset}
				}
			}
		}
	})
	if a.pod != nil {
		a.collectPodTypes(a.pod)
	}
	return a
}

// collectPodTypes adds t and the core/v1 struct types its fields are made of.
func (a *analysis) collectPodTypes(t types.Type) {
	named := namedOf(t)
	if named == nil {
		switch u := t.(type) {
		case *types.Slice:
			a.collectPodTypes(u.Elem())
		case *types.Array:
			a.collectPodTypes(u.Elem())
		case *types.Map:
			a.collectPodTypes(u.Elem())
		}
		return
	}
	obj := named.Obj()
	if obj.Pkg() == nil || obj.Pkg().Path() != corev1 || a.podTypes[obj] {
		return
	}
	st, ok := named.Underlying().(*types.Struct)
	if !ok {
		return
	}
	a.podTypes[obj] = true
	for i := 0; i < st.NumFields(); i++ {
		a.collectPodTypes(st.Field(i).Type())
	}
}

// namedOf is t's named type, through pointers, slices' elements are not.
func namedOf(t types.Type) *types.Named {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	n, _ := t.(*types.Named)
	return n
}

func (a *analysis) lookup(p *packages.Package, name string) *types.Func {
	fn, _ := p.Types.Scope().Lookup(name).(*types.Func)
	return fn
}

func funcName(fn *types.Func) string {
	name := fn.Name()
	if sig, ok := fn.Type().(*types.Signature); ok && sig.Recv() != nil {
		if n := namedOf(sig.Recv().Type()); n != nil {
			name = n.Obj().Name() + "." + name
		}
	}
	if fn.Pkg() != nil {
		return fn.Pkg().Path() + "." + name
	}
	return name
}

// reachable returns the functions of the root package and every function with a body that they
// call or refer to, transitively.
func (a *analysis) reachable(root *packages.Package) []*function {
	seen := map[*types.Func]bool{}
	var queue []*types.Func
	add := func(fn *types.Func) {
		fn = fn.Origin()
		if !seen[fn] && a.funcs[fn] != nil {
			seen[fn] = true
			queue = append(queue, fn)
		}
	}
	for fn, f := range a.funcs {
		if fn.Pkg() == root.Types && f != nil {
			add(fn)
		}
	}
	var out []*function
	for len(queue) > 0 {
		fn := queue[0]
		queue = queue[1:]
		f := a.funcs[fn]
		out = append(out, f)
		ast.Inspect(f.decl.Body, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok {
				if used, ok := f.info.Uses[id].(*types.Func); ok {
					add(used)
				}
			}
			return true
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// reads returns the reads of a pod's fields in fn's body (with its closures). Written fields (the
// left of an assignment) are not reads.
func (a *analysis) reads(fn *function, getters bool) []Read {
	written := map[ast.Expr]bool{}
	ast.Inspect(fn.decl.Body, func(n ast.Node) bool {
		switch s := n.(type) {
		case *ast.AssignStmt:
			for _, lhs := range s.Lhs {
				written[ast.Unparen(lhs)] = true
			}
		case *ast.IncDecStmt:
			written[ast.Unparen(s.X)] = true
		}
		return true
	})
	var out []Read
	record := func(e ast.Expr, f Field) {
		out = append(out, Read{Field: f, Func: fn.name, Pos: fn.fset.Position(e.Pos())})
	}
	ast.Inspect(fn.decl.Body, func(n ast.Node) bool {
		e, ok := n.(*ast.SelectorExpr)
		if !ok || written[e] {
			return true
		}
		sel := fn.info.Selections[e]
		if sel == nil {
			return true
		}
		switch sel.Kind() {
		case types.FieldVal:
			for _, f := range a.steps(sel, a.viaPod(fn, e.X)) {
				record(e, f)
			}
		case types.MethodVal:
			// pod.GetLabels(): a getter a pod inherits from its ObjectMeta reads that field.
			method, ok := sel.Obj().(*types.Func)
			if !getters || !ok || !strings.HasPrefix(method.Name(), "Get") {
				return true
			}
			recv := method.Type().(*types.Signature).Recv()
			if recv == nil || namedOf(recv.Type()) != a.meta || !(a.isPod(sel.Recv()) || a.viaPod(fn, e.X)) {
				return true
			}
			name := strings.TrimPrefix(method.Name(), "Get")
			if st, ok := a.meta.Underlying().(*types.Struct); ok {
				for i := 0; i < st.NumFields(); i++ {
					if st.Field(i).Name() == name {
						record(e, Field{Type: "ObjectMeta", Name: name})
					}
				}
			}
		}
		return true
	})
	return out
}

// isPod says whether t is (a pointer to) core/v1's Pod.
func (a *analysis) isPod(t types.Type) bool { return namedOf(t) == a.pod }

// viaPod says whether x is a pod's ObjectMeta (pod.ObjectMeta), so that a field read on it is a
// pod's.
func (a *analysis) viaPod(fn *function, x ast.Expr) bool {
	s, ok := ast.Unparen(x).(*ast.SelectorExpr)
	if !ok {
		return false
	}
	sel := fn.info.Selections[s]
	return sel != nil && sel.Kind() == types.FieldVal && sel.Obj().Name() == "ObjectMeta" && a.isPod(sel.Recv())
}

// steps returns the fields a field selection reads, embedded ones included (pod.Name reads
// Pod.ObjectMeta and ObjectMeta.Name), keeping those of a pod's own types and the ObjectMeta of a
// pod.
func (a *analysis) steps(sel *types.Selection, metaOfPod bool) []Field {
	var out []Field
	t := sel.Recv()
	for _, index := range sel.Index() {
		named := namedOf(t)
		if named == nil {
			return out
		}
		st, ok := named.Underlying().(*types.Struct)
		if !ok {
			return out
		}
		field := st.Field(index)
		switch {
		case a.podTypes[named.Obj()]:
			out = append(out, Field{Type: named.Obj().Name(), Name: field.Name()})
			metaOfPod = named == a.pod && field.Name() == "ObjectMeta"
		case named == a.meta && metaOfPod:
			out = append(out, Field{Type: "ObjectMeta", Name: field.Name()})
			metaOfPod = false
		default:
			metaOfPod = false
		}
		t = field.Type()
	}
	return out
}

// whole returns the pod's types that trimPod copies whole: reachable from a kept field's type
// through types none of whose fields trimPod reads.
func (a *analysis) whole(kept map[Field]bool) map[string]bool {
	read := map[string]bool{}
	for f := range kept {
		read[f.Type] = true
	}
	byName := map[string]*types.TypeName{}
	for obj := range a.podTypes {
		byName[obj.Name()] = obj
	}
	whole := map[string]bool{}
	var visit func(t types.Type)
	visit = func(t types.Type) {
		switch u := t.(type) {
		case *types.Pointer:
			visit(u.Elem())
			return
		case *types.Slice:
			visit(u.Elem())
			return
		case *types.Array:
			visit(u.Elem())
			return
		case *types.Map:
			visit(u.Elem())
			return
		}
		named, ok := t.(*types.Named)
		if !ok || !a.podTypes[named.Obj()] || read[named.Obj().Name()] || whole[named.Obj().Name()] {
			return
		}
		whole[named.Obj().Name()] = true
		st := named.Underlying().(*types.Struct)
		for i := 0; i < st.NumFields(); i++ {
			visit(st.Field(i).Type())
		}
	}
	for f := range kept {
		obj := byName[f.Type]
		if obj == nil {
			continue // ObjectMeta
		}
		st := obj.Type().Underlying().(*types.Struct)
		for i := 0; i < st.NumFields(); i++ {
			if st.Field(i).Name() == f.Name {
				visit(st.Field(i).Type())
			}
		}
	}
	return whole
}

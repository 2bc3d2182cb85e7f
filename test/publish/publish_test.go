// Package publish tests the operator's path from a release to a master against a real registry
// (Debian's docker-registry, CNCF distribution 2.8, TLS from a test CA, htpasswd): make publish
// pushes a release cut for that registry, an independent client (skopeo) pulls it back, cosign's
// own CLI verifies the signatures and fetches the SBOM, cpswap --verify-key accepts our key and
// refuses another; and every bad input fails with an error naming its cause and leaves no tag
// behind.
package publish

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idc-lts/kube-1.17/test/harness"
)

const repoPath = "idc-lts"

var components = harness.Components

type env struct {
	t        *testing.T
	repo     string // repository root
	reg      *harness.Registry
	proxy    *killingProxy
	host     string // what the release names: the proxy's address
	release  string // the release directory, cut for host
	version  string
	tmp      string
	cosign   string
	skopeo   string
	logDir   string
	password string // COSIGN_PASSWORD of both key pairs
}

func TestPublish(t *testing.T) {
	e := setup(t)

	// make release scanned what it ships (build/vulncheck.sh --release): govulncheck's JSON and
	// our report for every binary, each listed in SHA256SUMS, nothing left unexplained.
	t.Run("the release carries the scan of each binary", func(t *testing.T) {
		sums, err := os.ReadFile(filepath.Join(e.release, "SHA256SUMS"))
		if err != nil {
			t.Fatal(err)
		}
		for _, binary := range append(append([]string{}, components...), "cpswap") {
			for _, ext := range []string{".json", ".txt"} {
				name := "vulncheck/linux-" + runtime.GOARCH + "/" + binary + ext
				data, err := os.ReadFile(filepath.Join(e.release, name))
				if err != nil {
					t.Errorf("the release has no %s: %v", name, err)
					continue
				}
				if !strings.Contains(string(sums), "  "+name+"\n") {
					t.Errorf("SHA256SUMS does not list %s", name)
				}
				if ext == ".txt" && (!strings.Contains(string(data), "govulncheck v") || strings.Contains(string(data), "NOT EXPLAINED")) {
					t.Errorf("%s is not a report with every finding explained:\n%s", name, data)
				}
			}
		}
	})

	// Bad inputs first, while the registry is empty: each must fail, name its cause, and leave
	// no tag.
	t.Run("wrong password", func(t *testing.T) {
		wrong := filepath.Join(e.tmp, "docker-wrong")
		e.reg.WriteDockerConfig(t, wrong, "not-the-password")
		out := e.failPublish(t, "DOCKER_CONFIG="+wrong)
		mustContain(t, out, "refused the credentials")
		e.noTags(t)
	})
	t.Run("unknown CA", func(t *testing.T) {
		out := e.failPublish(t, "REGISTRY_CA_FILE=")
		mustContain(t, out, "certificate signed by unknown authority")
		e.noTags(t)
	})
	t.Run("registry killed mid-push", func(t *testing.T) {
		e.proxy.killOnUpload.Store(true)
		out := e.failPublish(t)
		e.proxy.killOnUpload.Store(false)
		if e.proxy.kills.Load() == 0 {
			t.Fatalf("the registry was not killed: the push uploaded nothing?\n%s", out)
		}
		mustContain(t, out, components[0]+": pushing")
		e.reg.Restart()
		e.noTags(t)
	})
	t.Run("release cut for another registry", func(t *testing.T) {
		out := e.failPublish(t, "REGISTRY="+e.host+"/elsewhere")
		mustContain(t, out, "the release was cut for another registry")
		e.noTags(t)
	})
	t.Run("release changed after it was cut", func(t *testing.T) {
		sbom := filepath.Join(e.release, "sbom.spdx.json")
		original, err := os.ReadFile(sbom)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(sbom, append(append([]byte{}, original...), '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		out := e.failPublish(t)
		if err := os.WriteFile(sbom, original, 0o644); err != nil {
			t.Fatal(err)
		}
		mustContain(t, out, "sbom.spdx.json does not match SHA256SUMS")
		e.noTags(t)
	})
	t.Run("wrong signing key password", func(t *testing.T) {
		out := e.failPublish(t, "COSIGN_PASSWORD=wrong")
		mustContain(t, out, "cannot decrypt it")
		e.noTags(t)
	})

	var first string
	t.Run("first push, signed", func(t *testing.T) {
		start := time.Now()
		first = e.publish(t)
		t.Logf("first push in %v:\n%s", time.Since(start).Round(100*time.Millisecond), first)
		if regexp.MustCompile(`(?m)^uploaded [1-9][0-9]* blobs`).FindString(first) == "" {
			t.Fatalf("the first push reports no upload:\n%s", first)
		}
	})
	if t.Failed() {
		t.FailNow()
	}
	t.Run("pulled back by skopeo, digests equal", func(t *testing.T) {
		for _, c := range components {
			raw := e.skopeoRun(t, "inspect", "--raw", e.skopeoCreds("src"), "--cert-dir", e.certDir(), "docker://"+e.tag(c))
			got := fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(raw)))
			if got != e.digest(c) {
				t.Errorf("%s: the registry serves the tag as %s, the release says %s", c, got, e.digest(c))
			}
			// Every blob of every platform, checked against its digest by skopeo.
			dest := filepath.Join(e.tmp, "pulled-"+c)
			e.skopeoRun(t, "copy", "--all", "--quiet", e.skopeoCreds("src"), "--src-cert-dir", e.certDir(), "docker://"+e.byDigest(c), "oci:"+dest)
		}
	})
	t.Run("second push uploads nothing", func(t *testing.T) {
		start := time.Now()
		second := e.publish(t)
		t.Logf("second push in %v:\n%s", time.Since(start).Round(100*time.Millisecond), second)
		mustContain(t, second, "nothing uploaded")
	})
	t.Run("cosign verify accepts our key, refuses another", func(t *testing.T) {
		for _, c := range components {
			ref := e.pinned(c)
			out, err := e.cosignRun("verify", "--key", e.key("release", "pub"), "--insecure-ignore-tlog=true", ref)
			if err != nil {
				t.Fatalf("cosign verify %s: %v\n%s", ref, err, out)
			}
			out, err = e.cosignRun("verify", "--key", e.key("other", "pub"), "--insecure-ignore-tlog=true", ref)
			if err == nil {
				t.Fatalf("cosign verify with another key accepted %s:\n%s", ref, out)
			}
			mustContain(t, out, "no matching signatures")
			t.Logf("cosign verify %s with another key: %s", c, lastLine(out))
		}
	})
	t.Run("cosign verify-blob accepts SHA256SUMS.sig with our key, refuses another; the sums list the kubelet and its package", func(t *testing.T) {
		sums, sig := filepath.Join(e.release, "SHA256SUMS"), filepath.Join(e.release, "SHA256SUMS.sig")
		out, err := e.cosignRun("verify-blob", "--key", e.key("release", "pub"), "--signature", sig, "--insecure-ignore-tlog=true", sums)
		if err != nil {
			t.Fatalf("cosign verify-blob SHA256SUMS: %v\n%s", err, out)
		}
		mustContain(t, out, "Verified OK")
		out, err = e.cosignRun("verify-blob", "--key", e.key("other", "pub"), "--signature", sig, "--insecure-ignore-tlog=true", sums)
		if err == nil {
			t.Fatalf("cosign verify-blob with another key accepted SHA256SUMS:\n%s", out)
		}
		t.Logf("cosign verify-blob with another key: %s", lastLine(out))
		listed, err := os.ReadFile(sums)
		if err != nil {
			t.Fatal(err)
		}
		deb := fmt.Sprintf("packages/kubelet_%s_amd64.deb", strings.TrimPrefix(filepath.Base(e.release), "v"))
		for _, file := range []string{"bin/linux-amd64/kubelet", deb} {
			if !strings.Contains(string(listed), "  "+file+"\n") {
				t.Errorf("SHA256SUMS does not list %s:\n%s", file, listed)
			}
		}
	})
	t.Run("SBOM fetched by cosign equals the release's", func(t *testing.T) {
		want, err := os.ReadFile(filepath.Join(e.release, "sbom.spdx.json"))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range components {
			out, err := e.cosignRun("download", "sbom", e.pinned(c))
			if err != nil {
				t.Fatalf("cosign download sbom: %v\n%s", err, out)
			}
			if !strings.Contains(out, strings.TrimSpace(string(want))) {
				t.Errorf("%s: cosign download sbom did not print the release's SBOM:\n%.400s", c, out)
			}
		}
	})
	t.Run("cpswap --verify-key", func(t *testing.T) {
		e.cpswapVerify(t)
	})
	t.Run("tag pointing elsewhere is not moved unless forced", func(t *testing.T) {
		c, other := components[0], components[1]
		e.skopeoRun(t, "copy", "--all", "--quiet", e.skopeoCreds("src"), e.skopeoCreds("dest"), "--src-cert-dir", e.certDir(), "--dest-cert-dir", e.certDir(),
			"docker://"+e.byDigest(other), "docker://"+e.tag(c))
		elsewhere := e.tagDigest(t, c) // skopeo writes the index again: its digest is skopeo's
		if elsewhere == e.digest(c) {
			t.Fatalf("the tag still points to the release's %s", elsewhere)
		}
		out := e.failPublish(t)
		mustContain(t, out, "already points to "+elsewhere)
		if got := e.tagDigest(t, c); got != elsewhere {
			t.Fatalf("the refused push moved the tag to %s", got)
		}
		forced := e.publish(t, "FORCE=1")
		mustContain(t, forced, "the tag was moved")
		if got := e.tagDigest(t, c); got != e.digest(c) {
			t.Fatalf("the forced push left the tag at %s", got)
		}
	})
}

func setup(t *testing.T) *env {
	repo := harness.RepoRoot(t)
	e := &env{t: t, repo: repo, tmp: t.TempDir(), logDir: harness.LogDir(t), password: "test-key-password"}
	e.skopeo = harness.Tool(t, "skopeo", "skopeo")
	e.cosign = harness.Cosign(t)
	e.version = harness.ReleaseVersion(t)
	e.reg = harness.StartRegistry(t)
	e.proxy = startKillingProxy(t, e.reg)
	e.host = e.proxy.host
	for _, name := range []string{"release", "other"} {
		harness.CosignKeyPair(t, filepath.Join(e.tmp, name), e.password)
	}
	e.release = harness.CutRelease(t, e.host+"/"+repoPath, filepath.Join(e.tmp, "release"))
	return e
}

// publish runs make publish as the README tells the operator to, with extra variables; it fails
// the test unless it succeeds.
func (e *env) publish(t *testing.T, vars ...string) string {
	t.Helper()
	out, err := e.makePublish(vars...)
	if err != nil {
		t.Fatalf("make publish %v: %v\n%s", vars, err, out)
	}
	return out
}

// failPublish runs make publish and fails the test unless it fails.
func (e *env) failPublish(t *testing.T, vars ...string) string {
	t.Helper()
	out, err := e.makePublish(vars...)
	if err == nil {
		t.Fatalf("make publish %v succeeded:\n%s", vars, out)
	}
	t.Logf("make publish %v failed as it should: %s", vars, errorLine(out))
	return out
}

func (e *env) makePublish(vars ...string) (string, error) {
	makeVars := []string{"REGISTRY=" + e.host + "/" + repoPath, "RELEASE_DIR=" + e.release, "SIGNING_KEY=" + e.key("release", "key")}
	env := []string{"COSIGN_PASSWORD=" + e.password}
	for _, v := range vars {
		if strings.HasPrefix(v, "DOCKER_CONFIG=") || strings.HasPrefix(v, "COSIGN_PASSWORD=") {
			env = append(env, v)
		} else {
			makeVars = append(makeVars, v)
		}
	}
	return harness.Publish(e.t, e.reg, makeVars, env)
}

func (e *env) key(pair, ext string) string { return filepath.Join(e.tmp, pair, "cosign."+ext) }

func (e *env) digest(component string) string {
	d, err := os.ReadFile(filepath.Join(e.release, "images", component+".digest"))
	if err != nil {
		e.t.Fatal(err)
	}
	return strings.TrimSpace(string(d))
}

func (e *env) tag(component string) string {
	return fmt.Sprintf("%s/%s/%s:%s", e.host, repoPath, component, e.version)
}

// pinned is the reference the release's manifests and the README use: tag and digest.
func (e *env) pinned(component string) string { return e.tag(component) + "@" + e.digest(component) }

// byDigest is the reference by digest alone (skopeo takes no tag with a digest).
func (e *env) byDigest(component string) string {
	return fmt.Sprintf("%s/%s/%s@%s", e.host, repoPath, component, e.digest(component))
}

// noTags checks the registry's storage: no repository has a tag.
func (e *env) noTags(t *testing.T) {
	t.Helper()
	for _, c := range components {
		if tags := e.reg.Tags(repoPath + "/" + c); len(tags) > 0 {
			t.Errorf("%s has tags %v after a failed push", c, tags)
		}
	}
}

func (e *env) tagDigest(t *testing.T, component string) string {
	raw := e.skopeoRun(t, "inspect", "--raw", e.skopeoCreds("src"), "--cert-dir", e.certDir(), "docker://"+e.tag(component))
	return fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(raw)))
}

// certDir is a directory in the layout skopeo reads a registry's CA from (ca.crt).
func (e *env) certDir() string {
	dir := filepath.Join(e.tmp, "skopeo-certs")
	if _, err := os.Stat(dir); err != nil {
		pem, err := os.ReadFile(e.reg.CAFile)
		if err != nil {
			e.t.Fatal(err)
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			e.t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "ca.crt"), pem, 0o600); err != nil {
			e.t.Fatal(err)
		}
	}
	return dir
}

func (e *env) skopeoCreds(side string) string {
	flag := "--creds"
	if side == "dest" || side == "src" {
		flag = "--" + side + "-creds"
	}
	return flag + "=" + e.reg.User + ":" + e.reg.Password
}

func (e *env) skopeoRun(t *testing.T, args ...string) string {
	t.Helper()
	// skopeo inspect takes --creds, copy takes --src-creds/--dest-creds.
	if args[0] == "inspect" {
		for i, a := range args {
			args[i] = strings.Replace(a, "--src-creds=", "--creds=", 1)
		}
	}
	cmd := exec.Command(e.skopeo, args...)
	cmd.Env = append(os.Environ(), "HOME="+e.tmp) // no policy or auth of the machine's
	writePolicy(t, e.tmp)
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("skopeo %v: %v\n%s", args, err, stderr)
	}
	return string(out)
}

// writePolicy gives skopeo an accept-anything signature policy in HOME (the machine may have
// none); signatures are cosign's business here.
func writePolicy(t *testing.T, home string) {
	dir := filepath.Join(home, ".config", "containers")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "policy.json"), []byte(`{"default":[{"type":"insecureAcceptAnything"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
}

// cosignRun runs cosign's CLI with the registry's credentials and CA (SSL_CERT_FILE) and no
// network beyond it (no transparency log is asked: --insecure-ignore-tlog).
func (e *env) cosignRun(args ...string) (string, error) {
	cmd := exec.Command(e.cosign, args...)
	cmd.Env = append(os.Environ(), "DOCKER_CONFIG="+e.reg.DockerConfig, "SSL_CERT_FILE="+e.reg.CAFile,
		"COSIGN_EXPERIMENTAL=0", "TUF_ROOT="+filepath.Join(e.tmp, "tuf"), "HOME="+e.tmp)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// cpswapVerify runs cpswap plan and apply with --verify-key against the registry: our key
// passes; another key, a tag without digest, an unsigned digest and a tag whose digest is not the
// one given are refused before the manifest changes.
func (e *env) cpswapVerify(t *testing.T) {
	cpswap := filepath.Join(e.tmp, "cpswap")
	build := exec.Command("go", "build", "-o", cpswap, "./cmd/cpswap")
	build.Dir = e.repo
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building cpswap: %v\n%s", err, out)
	}
	manifests := harness.KubeadmManifests(t)
	manifest := filepath.Join(manifests, components[0]+".yaml")
	before, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (int, string) {
		cmd := exec.Command(cpswap, args...)
		cmd.Env = append(os.Environ(), "DOCKER_CONFIG="+e.reg.DockerConfig)
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, string(out)
	}
	backups := filepath.Join(e.tmp, "cpswap-backups")
	common := []string{"--manifest", manifest, "--backup-dir", backups, "--registry-ca-file", e.reg.CAFile}
	cases := []struct {
		name, verb, image, key string
		code                   int
		says                   string
	}{
		{"our key", "plan", e.pinned(components[0]), e.key("release", "pub"), 0, "is signed by the key in"},
		{"another key", "plan", e.pinned(components[0]), e.key("other", "pub"), 1, "none of its 1 signature(s) verifies with the given key"},
		{"another key, apply", "apply", e.pinned(components[0]), e.key("other", "pub"), 1, "none of its 1 signature(s) verifies with the given key"},
		{"a tag without digest", "apply", e.tag(components[0]), e.key("release", "pub"), 1, "--verify-key checks a digest"},
		{"an unsigned digest", "apply", fmt.Sprintf("%s/%s/%s@%s", e.host, repoPath, components[0], e.digest(components[1])), e.key("release", "pub"), 1, "not signed"},
		{"a tag and a digest that disagree", "apply", e.tag(components[0]) + "@" + e.digest(components[1]), e.key("release", "pub"), 1, "points at " + e.digest(components[0]) + " in the registry, not at the digest given"},
	}
	for _, c := range cases {
		args := append([]string{c.verb, "--image", c.image, "--verify-key", c.key}, common...)
		if c.verb == "apply" {
			args = append(args, "--kubeconfig", filepath.Join(e.tmp, "no-kubeconfig"))
		}
		code, out := run(args...)
		if code != c.code || !strings.Contains(out, c.says) {
			t.Errorf("cpswap %s, %s: exit %d, want %d saying %q:\n%s", c.verb, c.name, code, c.code, c.says, out)
		} else {
			t.Logf("cpswap %s, %s: exit %d: %s", c.verb, c.name, code, lastLine(out))
		}
		after, err := os.ReadFile(manifest)
		if err != nil {
			t.Fatal(err)
		}
		if string(after) != string(before) {
			t.Fatalf("cpswap %s, %s changed the manifest", c.verb, c.name)
		}
	}
}

// killingProxy forwards to the registry over TLS; while killOnUpload is set, the first blob
// upload that reaches it kills the registry (SIGKILL) and aborts the request, as a registry that
// dies mid-push would.
type killingProxy struct {
	host         string
	killOnUpload atomic.Bool
	kills        atomic.Int32
}

func startKillingProxy(t *testing.T, reg *harness.Registry) *killingProxy {
	pem, err := os.ReadFile(reg.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	target, _ := url.Parse("https://" + reg.Host)
	rp := httputil.NewSingleHostReverseProxy(target) // keeps the client's Host: the registry's URLs name the proxy
	rp.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	quiet := log.New(io.Discard, "", 0) // an aborted upload is what this proxy is for
	rp.ErrorLog = quiet
	p := &killingProxy{}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.killOnUpload.Load() && strings.Contains(r.URL.Path, "/blobs/uploads/") && (r.Method == http.MethodPatch || r.Method == http.MethodPut) {
			p.kills.Add(1)
			reg.Kill()
			panic(http.ErrAbortHandler)
		}
		rp.ServeHTTP(w, r)
	})
	cert, err := tls.LoadX509KeyPair(reg.CertFile, reg.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.host = ln.Addr().String()
	server := &http.Server{Handler: handler, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}, ErrorLog: quiet}
	go func() { _ = server.ServeTLS(ln, "", "") }()
	t.Cleanup(func() { server.Close() })
	// The proxy's address gets the registry's credentials too.
	reg.AddAuthHost(t, p.host)
	return p
}

func mustContain(t *testing.T, out, want string) {
	t.Helper()
	if !strings.Contains(out, want) {
		t.Fatalf("the output does not say %q:\n%s", want, out)
	}
}

// errorLine is publish's error line in make's output.
func errorLine(out string) string {
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "publish: ") {
			return line
		}
	}
	return lastLine(out)
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

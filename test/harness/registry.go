package harness

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// Registry is a CNCF distribution registry (Debian's docker-registry) serving on loopback with
// TLS from a test CA and htpasswd auth, its storage in a directory of its own.
type Registry struct {
	Host     string // 127.0.0.1:PORT
	CAFile   string // PEM of the CA that signed its certificate
	User     string
	Password string
	// DockerConfig is a directory holding a config.json with the registry's credentials (for
	// DOCKER_CONFIG).
	DockerConfig string
	// CertFile and KeyFile are its serving certificate (for 127.0.0.1) and key.
	CertFile, KeyFile string

	authHosts []string // the addresses the Docker configs log in to: Host, then AddAuthHost's

	t       testing.TB
	dir     string
	logDir  string
	process *Process
	starts  int
}

// registryDirPrefix names the test registries' directories under the temporary directory; a
// directory whose owner (the pid in its name) is gone is a killed run's and is removed.
const registryDirPrefix = "idc-lts-registry-"

// StartRegistry starts a registry for the test; it is stopped and its directory removed when the
// test ends. If the test process is killed instead, the registry dies with it (Pdeathsig) and
// the next StartRegistry removes the directory.
func StartRegistry(t testing.TB) *Registry {
	t.Helper()
	binary := Tool(t, "docker-registry", "docker-registry")
	removeStaleRegistryDirs(t)
	dir, err := os.MkdirTemp("", fmt.Sprintf("%s%d-", registryDirPrefix, os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	r := &Registry{
		Host: fmt.Sprintf("127.0.0.1:%d", FreePort(t)), CAFile: filepath.Join(dir, "ca.pem"),
		User: "publisher", Password: "secret-" + strconv.Itoa(os.Getpid()),
		DockerConfig: filepath.Join(dir, "docker"),
		t:            t, dir: dir, logDir: LogDir(t),
	}
	r.authHosts = []string{r.Host}
	r.writeCA(t)
	hash, err := bcrypt.GenerateFromPassword([]byte(r.Password), bcrypt.DefaultCost)
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "htpasswd"), r.User+":"+string(hash)+"\n")
	write(t, filepath.Join(dir, "config.yml"), fmt.Sprintf(`version: 0.1
log:
  level: info
  accesslog:
    disabled: false
storage:
  filesystem:
    rootdirectory: %s
  delete:
    enabled: true
http:
  addr: %s
  tls:
    certificate: %s
    key: %s
auth:
  htpasswd:
    realm: idc-lts-test
    path: %s
`, filepath.Join(dir, "storage"), r.Host, r.CertFile, r.KeyFile, filepath.Join(dir, "htpasswd")))
	r.WriteDockerConfig(t, r.DockerConfig, r.Password)
	r.start(binary)
	t.Cleanup(r.Stop)
	return r
}

// AddAuthHost makes DockerConfig log in to host too (a proxy in front of the registry).
func (r *Registry) AddAuthHost(t testing.TB, host string) {
	r.authHosts = append(r.authHosts, host)
	r.WriteDockerConfig(t, r.DockerConfig, r.Password)
}

// WriteDockerConfig writes a Docker config.json into dir that logs in to the registry with
// password.
func (r *Registry) WriteDockerConfig(t testing.TB, dir, password string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	auths := map[string]interface{}{}
	for _, host := range r.authHosts {
		auths[host] = map[string]string{"auth": base64.StdEncoding.EncodeToString([]byte(r.User + ":" + password))}
	}
	config, err := json.Marshal(map[string]interface{}{"auths": auths})
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "config.json"), string(config))
}

func (r *Registry) start(binary string) {
	r.t.Helper()
	r.starts++
	r.process = StartDaemon(r.t, r.logDir, fmt.Sprintf("registry-%d", r.starts), binary, "serve", filepath.Join(r.dir, "config.yml"))
	pool := x509.NewCertPool()
	pem, err := os.ReadFile(r.CAFile)
	if err != nil {
		r.t.Fatal(err)
	}
	pool.AppendCertsFromPEM(pem)
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := client.Get("https://" + r.Host + "/v2/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusUnauthorized {
				return // up, and asking for credentials
			}
		}
		if exited, werr := r.process.Exited(); exited {
			r.t.Fatalf("the registry exited: %v\n%s", werr, r.process.Tail(20))
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("the registry did not answer on %s within 30 s: %v\n%s", r.Host, err, r.process.Tail(20))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Kill kills the registry at once (its storage stays).
func (r *Registry) Kill() { r.process.Kill() }

// Restart starts the registry again on the same storage, address and credentials.
func (r *Registry) Restart() {
	r.t.Helper()
	r.process.Kill()
	r.start(Tool(r.t, "docker-registry", "docker-registry"))
}

// Stop stops the registry.
func (r *Registry) Stop() {
	if r.process != nil {
		r.process.Stop()
	}
}

// Tags lists the tags of a repository as the registry's storage holds them (no API, so that it
// works while the registry is down and cannot be fooled by credentials).
func (r *Registry) Tags(repository string) []string {
	entries, err := os.ReadDir(filepath.Join(r.dir, "storage", "docker", "registry", "v2", "repositories", repository, "_manifests", "tags"))
	if err != nil {
		return nil
	}
	var tags []string
	for _, e := range entries {
		tags = append(tags, e.Name())
	}
	return tags
}

// writeCA writes a CA (CAFile) and a certificate for 127.0.0.1 signed by it (CertFile, KeyFile).
func (r *Registry) writeCA(t testing.TB) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTemplate := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "idc-lts test registry CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	host, _, _ := net.SplitHostPort(r.Host)
	der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: host},
		IPAddresses: []net.IP{net.ParseIP(host)}, DNSNames: []string{"localhost"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	write(t, r.CAFile, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})))
	r.CertFile, r.KeyFile = filepath.Join(r.dir, "registry.pem"), filepath.Join(r.dir, "registry-key.pem")
	write(t, r.CertFile, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	write(t, r.KeyFile, string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})))
}

func write(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// removeStaleRegistryDirs removes the directories of registries whose test process is gone.
func removeStaleRegistryDirs(t testing.TB) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), registryDirPrefix+"*"))
	for _, dir := range dirs {
		pidText, _, _ := strings.Cut(strings.TrimPrefix(filepath.Base(dir), registryDirPrefix), "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || syscall.Kill(pid, 0) == nil {
			continue // not ours, or its test still runs
		}
		if err := os.RemoveAll(dir); err != nil {
			t.Logf("removing a killed run's registry directory: %v", err)
		} else {
			t.Logf("removed a killed run's registry directory %s", dir)
		}
	}
}

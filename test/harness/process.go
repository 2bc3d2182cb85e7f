package harness

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// Process is a component binary running for a test, with its output in a log file.
type Process struct {
	Name    string
	LogPath string
	cmd     *exec.Cmd
	done    chan struct{}
	err     error
}

// StartProcess starts binary with args; its stdout and stderr go to <LogDir>/<name>.log. It is
// killed when the test ends, and the log's tail is printed if the test failed.
func StartProcess(t testing.TB, logDir, name, binary string, args ...string) *Process {
	t.Helper()
	p := StartDaemon(t, logDir, name, binary, args...)
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("last lines of %s:\n%s", p.LogPath, p.Tail(15))
		}
	})
	return p
}

// StartDaemon is StartProcess for a process whose caller stops it, in an order of its own
// (a kubelet before its container runtime): nothing is registered to kill it.
func StartDaemon(t testing.TB, logDir, name, binary string, args ...string) *Process {
	t.Helper()
	logPath := filepath.Join(logDir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// If the test process is killed halfway (a timeout, Ctrl-C twice, SIGKILL), the kernel kills
	// what it started instead of leaving apiservers and controllers running.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		t.Fatalf("starting %s (%s): %v", name, binary, err)
	}
	p := &Process{Name: name, LogPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	return p
}

// Stop sends SIGTERM and waits for the process to end.
func (p *Process) Stop() { p.signal(syscall.SIGTERM) }

// Kill ends the process at once, as a crash or a lost machine would.
func (p *Process) Kill() { p.signal(syscall.SIGKILL) }

func (p *Process) signal(sig syscall.Signal) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// Pid is the process's ID.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Exited reports whether the process has ended, and how.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// Tail returns the last n lines of the process's log.
func (p *Process) Tail(n int) string {
	data, err := os.ReadFile(p.LogPath)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	for i, line := range lines {
		if len(line) > 300 {
			lines[i] = line[:300] + "..."
		}
	}
	return strings.Join(lines, "\n")
}

// FirstLogLine returns the first log line that contains substr, or "".
func (p *Process) FirstLogLine(substr string) string {
	line, _ := p.firstLogLine(substr, time.Time{})
	return line
}

// FirstLogTime is when the process first logged a line containing substr, read from the klog
// header ("I1123 10:00:00.123456", local time, no year), or the zero time if it has not.
func (p *Process) FirstLogTime(substr string) time.Time {
	return p.FirstLogTimeAfter(substr, time.Time{})
}

// FirstLogTimeAfter is FirstLogTime for the lines logged after after: a process that logs the
// same line before and after an event (a cache sync while standing by, and again when it leads).
func (p *Process) FirstLogTimeAfter(substr string, after time.Time) time.Time {
	_, at := p.firstLogLine(substr, after)
	return at
}

// firstLogLine returns the first line containing substr whose klog time is after after, and
// that time. With a zero after, a line without a readable time counts too.
func (p *Process) firstLogLine(substr string, after time.Time) (string, time.Time) {
	f, err := os.Open(p.LogPath)
	if err != nil {
		return "", time.Time{}
	}
	defer f.Close()
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 1024*1024), 1024*1024)
	for scanner.Scan() {
		line := scanner.Text()
		if !strings.Contains(line, substr) {
			continue
		}
		at := klogTime(line)
		if after.IsZero() || at.After(after) {
			return line, at
		}
	}
	return "", time.Time{}
}

// klogTime reads the time of a klog line ("I1123 10:00:00.123456 ...", local time, no year), or
// returns the zero time.
func klogTime(line string) time.Time {
	if len(line) < 21 {
		return time.Time{}
	}
	at, err := time.ParseInLocation("0102 15:04:05.000000", line[1:21], time.Local)
	if err != nil {
		return time.Time{}
	}
	return at.AddDate(time.Now().Year(), 0, 0)
}

// CountLogLines counts the log lines that contain substr.
func (p *Process) CountLogLines(substr string) int {
	return len(p.LogLines(substr))
}

// LogLines returns the log lines that contain substr, in order.
func (p *Process) LogLines(substr string) []string {
	f, err := os.Open(p.LogPath)
	if err != nil {
		return nil
	}
	defer f.Close()
	var lines []string
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 1024*1024), 1024*1024)
	for scanner.Scan() {
		if strings.Contains(scanner.Text(), substr) {
			lines = append(lines, scanner.Text())
		}
	}
	return lines
}

// ErrNoMetric is what Metric's error wraps when the endpoint does not export the metric at all.
var ErrNoMetric = errors.New("metric not exported")

// ErrNoSeries is what Metric's error wraps when the metric has no series with the labels asked
// for (a gauge vector nobody has set yet, for one).
var ErrNoSeries = errors.New("no such series")

// Metric returns the value of a counter or gauge scraped from a Prometheus endpoint, summed over
// the series whose labels include all of the given ones. A metric that is not there is an error.
func Metric(url, name string, labels map[string]string) (float64, error) {
	return MetricWithToken(url, "", name, labels)
}

// MetricWithToken is Metric for an endpoint that wants a bearer token, such as an apiserver's
// /metrics on its secure port (whose test certificate is not verified).
func MetricWithToken(url, token, name string, labels map[string]string) (float64, error) {
	families, err := scrape(url, token)
	if err != nil {
		return 0, err
	}
	family, ok := families[name]
	histogramSum := false
	if !ok && strings.HasSuffix(name, "_sum") {
		// The text parser files a histogram's _sum series under the histogram.
		family, ok = families[strings.TrimSuffix(name, "_sum")]
		histogramSum = ok && family.GetType() == dto.MetricType_HISTOGRAM
		ok = histogramSum
	}
	if !ok {
		return 0, fmt.Errorf("%s has no metric %s: %w", url, name, ErrNoMetric)
	}
	sum, found := 0.0, false
	for _, m := range family.Metric {
		if !hasLabels(m.GetLabel(), labels) {
			continue
		}
		found = true
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Untyped != nil:
			sum += m.Untyped.GetValue()
		case m.Histogram != nil && histogramSum:
			sum += m.Histogram.GetSampleSum()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		}
	}
	if !found {
		return 0, fmt.Errorf("%s has no series of %s with labels %v: %w", url, name, labels, ErrNoSeries)
	}
	return sum, nil
}

// Scrape reads every metric family from a Prometheus text endpoint.
func Scrape(url string) (map[string]*dto.MetricFamily, error) {
	return scrape(url, "")
}

func scrape(url, token string) (map[string]*dto.MetricFamily, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	families, err := new(expfmt.TextParser).TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %v", url, err)
	}
	return families, nil
}

func hasLabels(have []*dto.LabelPair, want map[string]string) bool {
	for k, v := range want {
		ok := false
		for _, l := range have {
			if l.GetName() == k && l.GetValue() == v {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

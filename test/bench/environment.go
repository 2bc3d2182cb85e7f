package bench

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"
)

// EnvironmentFile is the name of the Environment's JSON among the results.
const EnvironmentFile = "environment.json"

// Environment is where and when a benchmark ran.
type Environment struct {
	Date    string `json:"date"`
	Machine string `json:"machine"`
	Kernel  string `json:"kernel"`
	// ControlPlaneSHA256 identifies the stock kube-apiserver and etcd every run measured against.
	ControlPlaneSHA256 map[string]string `json:"controlPlaneSHA256"`
}

// DescribeEnvironment reads the CPU model, core count, memory and kernel from /proc.
func DescribeEnvironment(now time.Time) Environment {
	env := Environment{Date: now.UTC().Format("2006-01-02 15:04 UTC")}
	cpu := "unknown CPU"
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if name, value, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(name) == "model name" {
				cpu = strings.TrimSpace(value)
				break
			}
		}
	}
	memory := ""
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		if _, err := fmt.Sscanf(string(data), "MemTotal: %d kB", &kb); err == nil {
			memory = fmt.Sprintf(", %.0f GiB RAM", float64(kb)/(1<<20))
		}
	}
	env.Machine = fmt.Sprintf("%s, %d cores%s, %s/%s", cpu, runtime.NumCPU(), memory, runtime.GOOS, runtime.GOARCH)
	if data, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		env.Kernel = strings.TrimSpace(string(data))
	}
	return env
}

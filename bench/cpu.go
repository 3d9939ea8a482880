package bench

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strings"
)

// CPUName is the processor's model name from /proc/cpuinfo, with its
// family and model numbers (e.g. "Intel(R) Xeon(R) Processor (family 6,
// model 143)"): virtual machines often report a generic name, and the
// numbers still tell Sapphire Rapids from Zen 5. Every recorded figure
// names the CPU it was measured on. Elsewhere it is GOOS/GOARCH.
func CPUName() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return runtime.GOOS + "/" + runtime.GOARCH
	}
	defer f.Close()
	name, family, model := "", "", ""
	sc := bufio.NewScanner(f)
	for sc.Scan() && (name == "" || family == "" || model == "") {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "model name":
			name = strings.TrimSpace(v)
		case "cpu family":
			family = strings.TrimSpace(v)
		case "model":
			model = strings.TrimSpace(v)
		}
	}
	switch {
	case name == "":
		return runtime.GOOS + "/" + runtime.GOARCH
	case family != "" && model != "":
		return fmt.Sprintf("%s (family %s, model %s)", name, family, model)
	}
	return name
}

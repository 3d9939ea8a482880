// Package numa describes the machine's NUMA nodes and places memory on
// them, for the engine's NUMA-Torch-style execution: one pinned worker
// group per node, each reading the shard of every matrix that lives in its
// node's memory. It holds the machine side of placement — the topology,
// how many workers each node gets, CPU pinning, memory-policy requests,
// node-local arenas and first-touch prefaulting — while the engine decides
// which tiles each node owns.
//
// A Topology comes from sysfs or, so any machine can simulate several
// nodes, from the CFLOW_NUMA_TOPOLOGY environment variable. Placement goes
// through the Placer interface so tests can record exactly which byte
// ranges were bound to which node while the real mbind(2) still runs.
package numa

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// EnvTopology names the environment variable that overrides sysfs:
// "NODE:CPULIST;NODE:CPULIST…", e.g. "0:0;1:1" or "0:0-3;1:4-7". It exists
// so a one-node machine (CI, a laptop) can run the multi-node code path.
const EnvTopology = "CFLOW_NUMA_TOPOLOGY"

// SysfsNodes is where the kernel lists memory nodes and their CPUs.
const SysfsNodes = "/sys/devices/system/node"

// Node is one NUMA node: its kernel id (the memory node mbind targets) and
// the CPUs its worker group is pinned to.
type Node struct {
	ID   int
	CPUs []int
}

// Topology is the set of nodes the engine runs one worker group on, in
// ascending id order; index i in Nodes is "node i" of a file's shard plan.
type Topology struct {
	Nodes []Node
	// Source says where the topology came from (EnvTopology, "sysfs",
	// "single" or "Options"), for the run summary: a simulated topology must
	// never be mistaken for the machine's.
	Source string
}

// Single is a one-node topology over cpus: what the engine runs as the
// plain path.
func Single(cpus []int) *Topology {
	return &Topology{Nodes: []Node{{ID: 0, CPUs: append([]int(nil), cpus...)}}, Source: "single"}
}

// String is the topology in EnvTopology syntax, so a summary can be pasted
// back into the variable.
func (t *Topology) String() string {
	parts := make([]string, len(t.Nodes))
	for i, n := range t.Nodes {
		parts[i] = strconv.Itoa(n.ID) + ":" + FormatCPUList(n.CPUs)
	}
	return strings.Join(parts, ";")
}

// Parse reads EnvTopology syntax. Entries are separated by ';' (empty
// entries ignored); node ids and CPUs must each appear once.
func Parse(s string) (*Topology, error) {
	t := &Topology{Source: EnvTopology}
	seenCPU := map[int]int{}
	seenNode := map[int]bool{}
	for _, ent := range strings.Split(s, ";") {
		ent = strings.TrimSpace(ent)
		if ent == "" {
			continue
		}
		id, list, ok := strings.Cut(ent, ":")
		if !ok {
			return nil, fmt.Errorf("numa topology %q: entry %q is not NODE:CPULIST (e.g. 0:0-3;1:4-7)", s, ent)
		}
		n, err := strconv.Atoi(strings.TrimSpace(id))
		if err != nil || n < 0 {
			return nil, fmt.Errorf("numa topology %q: entry %q: node id %q is not a non-negative integer", s, ent, id)
		}
		if seenNode[n] {
			return nil, fmt.Errorf("numa topology %q: node %d listed twice", s, n)
		}
		seenNode[n] = true
		cpus, err := ParseCPUList(list)
		if err != nil {
			return nil, fmt.Errorf("numa topology %q: node %d: %v", s, n, err)
		}
		if len(cpus) == 0 {
			return nil, fmt.Errorf("numa topology %q: node %d has no CPUs", s, n)
		}
		for _, c := range cpus {
			if o, dup := seenCPU[c]; dup {
				return nil, fmt.Errorf("numa topology %q: CPU %d belongs to node %d and node %d", s, c, o, n)
			}
			seenCPU[c] = n
		}
		t.Nodes = append(t.Nodes, Node{ID: n, CPUs: cpus})
	}
	if len(t.Nodes) == 0 {
		return nil, fmt.Errorf("numa topology %q: no nodes", s)
	}
	sort.Slice(t.Nodes, func(i, j int) bool { return t.Nodes[i].ID < t.Nodes[j].ID })
	return t, nil
}

// maxCPU bounds CPU numbers so a typo such as "0-99999999" is an error,
// not a huge allocation.
const maxCPU = 1 << 16

// ParseCPUList reads the kernel's cpulist syntax ("0-3,8,10-11"), returning
// the CPUs sorted and without duplicates.
func ParseCPUList(s string) ([]int, error) {
	set := map[int]bool{}
	for _, f := range strings.Split(strings.TrimSpace(s), ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(f, "-")
		a, err := strconv.Atoi(lo)
		b := a
		if err == nil && isRange {
			b, err = strconv.Atoi(hi)
		}
		if err != nil || a < 0 || b < a || b >= maxCPU {
			return nil, fmt.Errorf("CPU list %q: %q is not a CPU or an ascending range A-B below %d", s, f, maxCPU)
		}
		for c := a; c <= b; c++ {
			set[c] = true
		}
	}
	out := make([]int, 0, len(set))
	for c := range set {
		out = append(out, c)
	}
	sort.Ints(out)
	return out, nil
}

// FormatCPUList writes sorted CPUs in cpulist syntax, folding runs.
func FormatCPUList(cpus []int) string {
	var b strings.Builder
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(cpus[i]))
		if j > i {
			b.WriteString("-" + strconv.Itoa(cpus[j]))
		}
		i = j + 1
	}
	return b.String()
}

// FromSysfs reads root/node*/cpulist. Memory-only nodes (an empty cpulist,
// e.g. CXL expanders) are left out: no worker group could run there.
func FromSysfs(root string) (*Topology, error) {
	dirs, err := filepath.Glob(filepath.Join(root, "node[0-9]*"))
	if err != nil {
		return nil, err
	}
	t := &Topology{Source: "sysfs"}
	for _, d := range dirs {
		id, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(d), "node"))
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(d, "cpulist"))
		if err != nil {
			return nil, fmt.Errorf("numa: %v", err)
		}
		cpus, err := ParseCPUList(string(b))
		if err != nil {
			return nil, fmt.Errorf("numa: %s: %v", filepath.Join(d, "cpulist"), err)
		}
		if len(cpus) > 0 {
			t.Nodes = append(t.Nodes, Node{ID: id, CPUs: cpus})
		}
	}
	if len(t.Nodes) == 0 {
		return nil, fmt.Errorf("numa: no node with CPUs under %s", root)
	}
	sort.Slice(t.Nodes, func(i, j int) bool { return t.Nodes[i].ID < t.Nodes[j].ID })
	return t, nil
}

// Detect returns EnvTopology's topology when the variable is set (a parse
// error is returned, never ignored), else sysfs's, else one node holding
// the CPUs this process may run on.
func Detect() (*Topology, error) {
	if s, ok := os.LookupEnv(EnvTopology); ok && strings.TrimSpace(s) != "" {
		t, err := Parse(s)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", EnvTopology, err)
		}
		return t, nil
	}
	if t, err := FromSysfs(SysfsNodes); err == nil {
		return t, nil
	}
	cpus, err := Allowed()
	if err != nil || len(cpus) == 0 {
		cpus = []int{0}
	}
	return Single(cpus), nil
}

// SplitThreads gives each node pinned workers in proportion to its CPUs,
// at least one each, so a node with more cores streams more of the
// weights. threads counts the engine's caller, as on the single-node path;
// the caller only coordinates a multi-node engine, so the workers number
// threads−1 in all (threads ≤ 0: one per CPU, less the caller's).
func (topo *Topology) SplitThreads(threads int) []int {
	C := 0
	for _, n := range topo.Nodes {
		C += len(n.CPUs)
	}
	total := threads - 1
	if threads <= 0 {
		total = C - 1
	}
	out := make([]int, len(topo.Nodes))
	for i, n := range topo.Nodes {
		out[i] = max(1, (total*len(n.CPUs)+C/2)/C)
	}
	return out
}

package e2e

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkBinarySize reports the size of the frontdesk binary, which
// carries the embedded NATS JetStream server (CGO_ENABLED=0 -trimpath,
// and also stripped with -s -w as contrib/build-image builds it); and, when this is a
// git checkout, the same two for the last commit before NATS came in
// (the parent of the first commit whose go.mod names nats-server), built
// from git in a temporary directory.
func BenchmarkBinarySize(b *testing.B) {
	for b.Loop() {
	}
	b.ReportMetric(0, "ns/op")
	now, nowStripped := fileMB(b, buildAt(b, ".", "")), fileMB(b, buildAt(b, ".", "-s -w"))
	b.ReportMetric(now, "MB")
	b.ReportMetric(nowStripped, "stripped-MB")
	out, err := exec.Command("git", "log", "--format=%H", "--reverse", "-S", "nats-io/nats-server", "--", "go.mod").Output()
	first, _, _ := strings.Cut(string(out), "\n")
	if err != nil || first == "" {
		b.Logf("no git history here (%v): no figures for the commit before NATS", err)
		return
	}
	src := b.TempDir()
	archive := exec.Command("sh", "-c", "git archive "+first+"^ | tar -x -C "+src)
	if msg, err := archive.CombinedOutput(); err != nil {
		b.Fatalf("git archive %s^: %v: %s", first, err, msg)
	}
	before, beforeStripped := fileMB(b, buildAt(b, src, "")), fileMB(b, buildAt(b, src, "-s -w"))
	b.ReportMetric(before, "before-nats-MB")
	b.ReportMetric(beforeStripped, "before-nats-stripped-MB")
	b.Logf("the commit before NATS: %s^; since then %+.1f MB (%+.1f MB stripped), NATS and everything else added", first[:12], now-before, nowStripped-beforeStripped)
}

// buildAt builds the main package in dir with ldflags; it returns the
// binary's path.
func buildAt(b *testing.B, dir, ldflags string) string {
	b.Helper()
	out := filepath.Join(b.TempDir(), "frontdesk")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", ldflags, "-o", out, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("build in %s: %v: %s", dir, err, msg)
	}
	return out
}

func fileMB(b *testing.B, path string) float64 {
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	return float64(fi.Size()) / 1e6
}

// idleSettle is how long the processes idle before their RSS is read:
// past start-up and the first lease renewals and heartbeats.
const idleSettle = 5 * time.Second

// BenchmarkIdleRSS reports the resident memory of an idle frontdesk: a
// single node (no NATS), and each of three cluster nodes (embedded NATS,
// R3) once they agree on a lease holder, after idleSettle without input.
func BenchmarkIdleRSS(b *testing.B) {
	for b.Loop() {
	}
	b.ReportMetric(0, "ns/op")
	single := exec.Command(binary, "-addr", "127.0.0.1:0", "-data", filepath.Join(b.TempDir(), "data"))
	stdout, err := single.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := single.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { single.Process.Kill(); single.Wait() }()
	sc := bufio.NewScanner(stdout)
	for sc.Scan() && !strings.Contains(sc.Text(), "listening on") {
	}
	go io.Copy(io.Discard, stdout)
	c := newTestCluster(b, clusterOpts{})
	c.holder()
	nodes := c.nodes
	time.Sleep(idleSettle)
	b.ReportMetric(rssMB(b, single.Process.Pid), "single-node-MB")
	var sum, most float64
	for _, n := range nodes {
		mb := rssMB(b, n.p.cmd.Process.Pid)
		sum += mb
		most = max(most, mb)
	}
	b.ReportMetric(sum/3, "cluster-node-mean-MB")
	b.ReportMetric(most, "cluster-node-max-MB")
}

var vmRSS = regexp.MustCompile(`VmRSS:\s+(\d+) kB`)

// rssMB reads a process's resident set size (Linux).
func rssMB(b *testing.B, pid int) float64 {
	s, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		b.Skipf("no /proc here: %v", err)
	}
	m := vmRSS.FindSubmatch(s)
	if m == nil {
		b.Fatalf("no VmRSS in /proc/%d/status", pid)
	}
	kb, _ := strconv.Atoi(string(m[1]))
	return float64(kb) / 1e3
}

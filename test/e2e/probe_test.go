package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubeadm-go/kubeadm/test/testbed"
)

// probe asks a Service for an answer five times a second from a node, in
// a shell loop of the node's, and counts the answers that were not 200.
type probe struct {
	from          *testbed.Node
	cmd           *exec.Cmd
	done          chan error
	log, stopFile string
	// counted is how many lines of the log earlier marks counted.
	counted int
	stopped bool
	failed  int
	total   int
}

// probeWorkload is the Deployment (two replicas of the web server on the
// worker) and its Service that the upgrade and rotation tests probe (the
// web server's / answers itself, its /api calls the API server with the
// Pod's service-account token). A terminating Pod answers two more
// seconds (preStop), so that kube-proxy has dropped it from the Service
// before it stops.
const probeWorkload = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: default
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      nodeSelector:
        kubernetes.io/hostname: %s
      terminationGracePeriodSeconds: 10
      containers:
      - name: web
        image: %s
        imagePullPolicy: Never
        ports:
        - containerPort: 8080
        readinessProbe:
          httpGet: {path: /, port: 8080}
          periodSeconds: 2
        lifecycle:
          preStop:
            sleep: {seconds: 2}
---
apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: default
spec:
  selector: {app: web}
  ports:
  - port: 80
    targetPort: 8080
`

// startProbe runs the web server workload on node target and starts
// probing its Service from node from.
func startProbe(t *testing.T, from, target *testbed.Node, tc *testbed.Toolchain) *probe {
	t.Helper()
	return startProbeOf(t, from, target, tc, fmt.Sprintf(probeWorkload, target.Name, testbed.WebserverImage), "/")
}

// startProbeOf is startProbe with the workload's manifest (a Deployment
// and a Service named web) and the path asked for: "/api" makes each
// probe a call of the web server's to the API server with its
// service-account token. A failed probe's log line ends with the start of
// the answer.
func startProbeOf(t *testing.T, from, target *testbed.Node, tc *testbed.Toolchain, workload, path string) *probe {
	t.Helper()
	archive := filepath.Join(target.Dir, "webserver.tar")
	if err := testbed.WriteWebserverArchive(archive, tc.Webserver); err != nil {
		t.Fatal(err)
	}
	if err := target.ImportImage(context.Background(), archive); err != nil {
		t.Fatal(err)
	}
	manifest := filepath.Join(from.Dir, "web.yaml")
	writeFile(t, manifest, workload)
	kubectl(t, from, "apply", "-f", manifest)
	kubectl(t, from, "-n", "default", "rollout", "status", "deployment/web", "--timeout=3m")
	ip := strings.TrimSpace(kubectl(t, from, "-n", "default", "get", "service", "web", "-o", "jsonpath={.spec.clusterIP}"))
	url := "http://" + ip + path
	eventually(t, time.Minute, "the web Service answering from "+from.Name, func() error {
		r := run(t, from, "curl", "-sf", "-m", "2", url)
		if r.Code != 0 || !strings.HasPrefix(r.Stdout, "ok ") {
			return fmt.Errorf("curl %s: exit %d %q", url, r.Code, r.Stdout)
		}
		return nil
	})

	p := &probe{from: from, log: filepath.Join(from.Dir, "probe.log"), stopFile: filepath.Join(from.Dir, "probe.stop"), done: make(chan error, 1)}
	_ = os.Remove(p.stopFile)
	_ = os.Remove(p.log)
	body := filepath.Join(from.Dir, "probe.body")
	// A call to the API server may wait for etcd (its handler gives up
	// after 8 s): more time than for the web server's own answer.
	limit := "2"
	if path != "/" {
		limit = "10"
	}
	script := fmt.Sprintf(`while [ ! -e %[1]s ]; do
  c=$(curl -s -o %[4]s -m %[5]s -w '%%{http_code}' %[2]s)
  if [ "$c" = 200 ]; then echo "$(date +%%s.%%N) $c"; else echo "$(date +%%s.%%N) $c $(head -c 300 %[4]s | tr '\n' ' ')"; fi >> %[3]s
  sleep 0.2
done`, p.stopFile, url, p.log, body, limit)
	p.cmd = from.Command(context.Background(), "sh", "-c", script)
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting the probe on %s: %v", from.Name, err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Logf("probing %s (Deployment web on %s) from %s", url, target.Name, from.Name)
	return p
}

// count reads the log and returns the failed and total probes, from line
// skip on, and the spans of consecutive failures (when they began, how
// long they lasted, how many probes and which answers).
func (p *probe) count(skip int) (failed, total int, outages []string) {
	data, _ := os.ReadFile(p.log)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	var (
		first, last string
		n           int
		codes       = map[string]int{}
		details     []string
	)
	closeOutage := func() {
		if n == 0 {
			return
		}
		outages = append(outages, fmt.Sprintf("%s for %s: %d probes %v %q", unixTime(first).Format("15:04:05.0"), unixTime(last).Sub(unixTime(first)).Round(100*time.Millisecond), n, codes, details))
		n, codes, details = 0, map[string]int{}, nil
	}
	for i, l := range lines {
		if i < skip || l == "" {
			continue
		}
		total++
		ts, rest, _ := strings.Cut(l, " ")
		code, detail, _ := strings.Cut(rest, " ")
		if code == "200" {
			closeOutage()
			continue
		}
		failed++
		if n == 0 {
			first = ts
		}
		last = ts
		n++
		codes[code]++
		if detail != "" && len(details) < 3 && !slices.Contains(details, detail) {
			details = append(details, detail)
		}
	}
	closeOutage()
	return failed, total, outages
}

// unixTime reads the probe log's "seconds.nanoseconds" time stamps (to
// the microsecond).
func unixTime(s string) time.Time {
	f, _ := strconv.ParseFloat(s, 64)
	return time.UnixMicro(int64(f * 1e6)).UTC()
}

// mark logs the failed probes since the last mark, as those of step.
func (p *probe) mark(t *testing.T, step string) {
	t.Helper()
	if p.stopped {
		return
	}
	failed, total, outages := p.count(p.counted)
	p.counted += total
	t.Logf("Service probes during %q: %d failed of %d", step, failed, total)
	for _, o := range outages {
		t.Logf("  failing from %s", o)
	}
	if failed > 0 {
		// What the cluster saw meanwhile (node and Pod readiness, the
		// controllers' decisions), to tell why.
		events := kubectlTry(t, p.from, "get", "events", "-A", "--sort-by=.lastTimestamp", "-o", "custom-columns=LAST:.lastTimestamp,NS:.metadata.namespace,OBJECT:.involvedObject.name,REASON:.reason,MESSAGE:.message")
		t.Logf("  the cluster's events: %s\n%s", events.err, events.out)
	}
}

// stop ends the probe loop and returns the failed and total probes.
// Stopping again returns the same.
func (p *probe) stop(t *testing.T) (failed, total int) {
	t.Helper()
	if p.stopped {
		return p.failed, p.total
	}
	p.stopped = true
	if err := os.WriteFile(p.stopFile, nil, 0o644); err != nil {
		t.Errorf("stopping the probe: %v", err)
	}
	select {
	case err := <-p.done:
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Errorf("the probe loop: %v", err)
		}
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		t.Errorf("the probe loop did not stop")
	}
	p.failed, p.total, _ = p.count(0)
	return p.failed, p.total
}

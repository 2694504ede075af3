package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// milestone is one moment of a control plane's boot, found in a log.
type milestone struct {
	name string
	at   time.Time
}

// timeline reads, from a test-bed node's logs (dir is the node's folder),
// the moments that make up the floor: the first sandbox asked for, each
// component's first log line, etcd's election, the API server serving and
// its priority classes. Missing ones are left out.
func timeline(dir string) []milestone {
	var ms []milestone
	add := func(name string, at time.Time) {
		if !at.IsZero() {
			ms = append(ms, milestone{name, at})
		}
	}
	add("first sandbox asked", firstMatch(filepath.Join(dir, "logs", "containerd.log"), "RunPodSandbox for", containerdTime))
	pods := filepath.Join(dir, "var-log-pods")
	for _, c := range []struct{ pod, event, match string }{
		{"etcd", "etcd started", ""},
		{"etcd", "etcd leader", "became leader"},
		{"kube-apiserver", "apiserver started", ""},
		{"kube-apiserver", "apiserver serving", "Serving securely"},
		{"kube-apiserver", "apiserver priority classes", "all system priority classes"},
		{"kube-controller-manager", "controller-manager started", ""},
		{"kube-scheduler", "scheduler started", ""},
	} {
		logs, _ := filepath.Glob(filepath.Join(pods, "kube-system_"+c.pod+"-*", c.pod, "0.log"))
		if len(logs) == 1 {
			add(c.event, firstMatch(logs[0], c.match, podLogTime))
		}
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].at.Before(ms[j].at) })
	return ms
}

// firstMatch returns the time of the first line of file containing match
// ("" matches any line), as read by stamp.
func firstMatch(file, match string, stamp func(string) time.Time) time.Time {
	f, err := os.Open(file)
	if err != nil {
		return time.Time{}
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if strings.Contains(sc.Text(), match) {
			if t := stamp(sc.Text()); !t.IsZero() {
				return t
			}
		}
	}
	return time.Time{}
}

// containerdTime reads containerd's time="..." field.
func containerdTime(line string) time.Time {
	_, rest, ok := strings.Cut(line, `time="`)
	if !ok {
		return time.Time{}
	}
	v, _, _ := strings.Cut(rest, `"`)
	t, _ := time.Parse(time.RFC3339Nano, v)
	return t
}

// podLogTime reads the time a CRI log line starts with.
func podLogTime(line string) time.Time {
	v, _, _ := strings.Cut(line, " ")
	t, _ := time.Parse(time.RFC3339Nano, v)
	return t
}

// printTimeline writes ms as seconds after launched, the kubelet's launch.
func printTimeline(w io.Writer, launched time.Time, ms []milestone) {
	for _, m := range ms {
		fmt.Fprintf(w, "    %6.2fs %s\n", m.at.Sub(launched).Seconds(), m.name)
	}
}

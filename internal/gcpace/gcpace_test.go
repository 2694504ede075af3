package gcpace

import (
	"runtime/debug"
	"slices"
	"testing"
	"time"
)

// recorder keeps the values a fake SetGCPercent was called with.
type recorder struct{ set []int }

func (r *recorder) setPercent(p int) int {
	r.set = append(r.set, p)
	return 0
}

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestStartRaisesThenRestores(t *testing.T) {
	var r recorder
	var gotWindow time.Duration
	var restore func()
	start(env(nil), r.setPercent, func(d time.Duration, f func()) *time.Timer {
		gotWindow, restore = d, f
		return nil
	})
	if !slices.Equal(r.set, []int{startPercent}) {
		t.Fatalf("at start-up the pace was set to %v, want [%d]", r.set, startPercent)
	}
	if gotWindow != window || restore == nil {
		t.Fatalf("the default pace comes back after %v (func %v), want %v", gotWindow, restore != nil, window)
	}
	restore()
	if !slices.Equal(r.set, []int{startPercent, defaultPercent}) {
		t.Errorf("after the window the pace was set to %v, want [%d %d]", r.set, startPercent, defaultPercent)
	}
}

func TestUserGOGCIsKept(t *testing.T) {
	var r recorder
	vars := env(map[string]string{"GOGC": "off"})
	start(vars, r.setPercent, func(time.Duration, func()) *time.Timer {
		t.Error("no timer when the user sets GOGC")
		return nil
	})
	steady(vars, r.setPercent)
	if len(r.set) != 0 {
		t.Errorf("with GOGC in the environment the pace was set to %v", r.set)
	}
}

func TestSteady(t *testing.T) {
	var r recorder
	steady(env(nil), r.setPercent)
	steady(env(nil), r.setPercent)
	if !slices.Equal(r.set, []int{defaultPercent, defaultPercent}) {
		t.Errorf("Steady set the pace to %v, want the default each time", r.set)
	}
}

// TestRealPace: Steady sets the real collector's pace to Go's default.
func TestRealPace(t *testing.T) {
	t.Setenv("GOGC", "")
	debug.SetGCPercent(startPercent)
	Steady()
	if got := debug.SetGCPercent(defaultPercent); got != defaultPercent {
		t.Errorf("after Steady the pace is %d, want %d", got, defaultPercent)
	}
}

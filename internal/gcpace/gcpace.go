package gcpace

import (
	"os"
	"runtime/debug"
	"time"
)

const (
	// startPercent is the GOGC value in force while the process starts.
	startPercent = 400
	// defaultPercent is Go's default GOGC.
	defaultPercent = 100
	// window is how long after the init the start-up pace lasts at most.
	window = 200 * time.Millisecond
)

func init() {
	start(os.Getenv, debug.SetGCPercent, time.AfterFunc)
}

// start sets the start-up pace and has the default one come back after
// window, unless the environment sets GOGC.
func start(getenv func(string) string, setPercent func(int) int, after func(time.Duration, func()) *time.Timer) {
	if userSet(getenv) {
		return
	}
	setPercent(startPercent)
	after(window, func() { setPercent(defaultPercent) })
}

// Steady brings Go's default pace back now (unless the environment sets
// GOGC), for work that allocates steadily: making keys. It may be called
// any number of times, from any goroutine.
func Steady() {
	steady(os.Getenv, debug.SetGCPercent)
}

func steady(getenv func(string) string, setPercent func(int) int) {
	if !userSet(getenv) {
		setPercent(defaultPercent)
	}
}

// userSet reports whether the environment chooses the collector's pace.
func userSet(getenv func(string) string) bool {
	return getenv("GOGC") != ""
}

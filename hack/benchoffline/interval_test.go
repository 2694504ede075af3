package main

import (
	"testing"
	"time"
)

// walls returns samples with these wall times.
func walls(ms ...int) []sample {
	s := make([]sample, len(ms))
	for i, m := range ms {
		s[i].wall = time.Duration(m) * time.Millisecond
	}
	return s
}

func TestSpeedUpIntervalConstantRatio(t *testing.T) {
	var ours, upstream []int
	for i := range 31 {
		ours = append(ours, 600+i)
		upstream = append(upstream, 2*(600+i))
	}
	lo, hi := speedUpInterval(walls(ours...), walls(upstream...))
	if lo != 2 || hi != 2 {
		t.Fatalf("interval %.3f–%.3f, want exactly 2 when every round has that ratio", lo, hi)
	}
}

func TestSpeedUpIntervalHoldsTheEstimate(t *testing.T) {
	var ours, upstream []int
	for i := range 41 {
		ours = append(ours, 600+(i*37)%90)
		upstream = append(upstream, 1100+(i*53)%300)
	}
	o, u := walls(ours...), walls(upstream...)
	est := median(u).wall.Seconds() / median(o).wall.Seconds()
	lo, hi := speedUpInterval(o, u)
	if !(lo < est && est < hi) || hi-lo > 0.5 {
		t.Fatalf("interval %.3f–%.3f around the estimate %.3f", lo, hi, est)
	}
	lo2, hi2 := speedUpInterval(o, u)
	if lo2 != lo || hi2 != hi {
		t.Fatalf("the same samples gave %.3f–%.3f, then %.3f–%.3f", lo, hi, lo2, hi2)
	}
}

func TestSpeedUpIntervalEmpty(t *testing.T) {
	if lo, hi := speedUpInterval(nil, nil); lo != 0 || hi != 0 {
		t.Fatalf("no rounds gave %v–%v", lo, hi)
	}
}

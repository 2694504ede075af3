package main

import (
	"testing"
	"time"
)

func TestSpeedUpIntervalConstantRatio(t *testing.T) {
	var ours, upstream []time.Duration
	for i := range 31 {
		d := time.Duration(600+i) * time.Millisecond
		ours = append(ours, d)
		upstream = append(upstream, 2*d)
	}
	lo, hi := speedUpInterval(ours, upstream, 1000)
	if lo != 2 || hi != 2 {
		t.Fatalf("interval %.3f–%.3f, want exactly 2 when every round has that ratio", lo, hi)
	}
}

func TestSpeedUpIntervalHoldsTheEstimate(t *testing.T) {
	var ours, upstream []time.Duration
	for i := range 41 {
		ours = append(ours, time.Duration(600+(i*37)%90)*time.Millisecond)
		upstream = append(upstream, time.Duration(1100+(i*53)%300)*time.Millisecond)
	}
	est := durationMedian(append([]time.Duration(nil), upstream...)).Seconds() /
		durationMedian(append([]time.Duration(nil), ours...)).Seconds()
	lo, hi := speedUpInterval(ours, upstream, 2000)
	if !(lo < est && est < hi) || hi-lo > 0.5 {
		t.Fatalf("interval %.3f–%.3f around the estimate %.3f", lo, hi, est)
	}
	lo2, hi2 := speedUpInterval(ours, upstream, 2000)
	if lo2 != lo || hi2 != hi {
		t.Fatalf("the same samples gave %.3f–%.3f, then %.3f–%.3f", lo, hi, lo2, hi2)
	}
}

func TestSpeedUpIntervalEmpty(t *testing.T) {
	if lo, hi := speedUpInterval(nil, nil, 100); lo != 0 || hi != 0 {
		t.Fatalf("no rounds gave %v–%v", lo, hi)
	}
}

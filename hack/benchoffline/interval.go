package main

import (
	"math/rand/v2"
	"slices"
	"time"
)

// speedUpInterval tells how precisely one run pins down its wall speed-up
// (upstream's median wall over ours'): it draws the run's rounds again,
// with replacement, resamples times, each round's two samples kept
// together as they ran side by side, and returns the 2.5th and 97.5th
// percentiles of the speed-up over the draws. The random source is fixed,
// so the same samples always give the same interval.
func speedUpInterval(ours, upstream []time.Duration, resamples int) (lo, hi float64) {
	n := len(ours)
	if n == 0 || n != len(upstream) || resamples < 1 {
		return 0, 0
	}
	rng := rand.New(rand.NewPCG(1, 2))
	o, u := make([]time.Duration, n), make([]time.Duration, n)
	ratios := make([]float64, resamples)
	for i := range ratios {
		for j := range n {
			k := rng.IntN(n)
			o[j], u[j] = ours[k], upstream[k]
		}
		ratios[i] = durationMedian(u).Seconds() / durationMedian(o).Seconds()
	}
	slices.Sort(ratios)
	return ratios[resamples*25/1000], ratios[(resamples*975)/1000-1]
}

// durationMedian returns the median of d (the upper one of an even count,
// as median does), sorting d in place.
func durationMedian(d []time.Duration) time.Duration {
	slices.Sort(d)
	return d[len(d)/2]
}

package main

import (
	"math/rand/v2"
	"slices"
)

// redraws is how many times speedUpInterval draws a run's rounds again.
const redraws = 2000

// speedUpInterval tells how precisely one run pins down its wall speed-up
// (upstream's median wall over ours', as run prints it): it draws the
// run's rounds again, with replacement, redraws times, each round's two
// samples kept together as they ran side by side, and returns the 2.5th
// and 97.5th percentiles of the speed-up over the draws. The random source
// is fixed, so the same samples always give the same interval.
func speedUpInterval(ours, upstream []sample) (lo, hi float64) {
	n := len(ours)
	if n == 0 || n != len(upstream) {
		return 0, 0
	}
	rng := rand.New(rand.NewPCG(1, 2))
	o, u := make([]sample, n), make([]sample, n)
	ratios := make([]float64, redraws)
	for i := range ratios {
		for j := range n {
			k := rng.IntN(n)
			o[j], u[j] = ours[k], upstream[k]
		}
		ratios[i] = median(u).wall.Seconds() / median(o).wall.Seconds()
	}
	slices.Sort(ratios)
	tail := len(ratios) * 25 / 1000
	return ratios[tail], ratios[len(ratios)-1-tail]
}

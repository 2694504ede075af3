// Package preflight holds kubeadm's preflight checks and the runner that
// executes them.
//
// A Check is a name (the one --ignore-preflight-errors accepts, matched
// without regard to case) and a function returning warnings and errors.
// Run executes a list of checks concurrently, prints their warnings in the
// list's order, turns the errors of ignored checks into warnings and
// returns every remaining error at once as an *Error.
//
// Checks never touch the machine directly: everything they read, bind,
// execute or dial goes through a Host, so tests run them against fakes.
// NewHost returns the Host of the machine kubeadm runs on.
//
// Checks only inspect; none changes the machine (an image pull adds images
// to the container runtime, which is what it is for). Running them twice
// gives the same answers.
package preflight

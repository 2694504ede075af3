package cri

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
)

const (
	// DefaultPullAttempts is how often a pull is tried before the image
	// counts as failed, when PullOptions.Attempts is zero.
	DefaultPullAttempts = 5
	// DefaultPullParallelism is how many pulls run at once when they are
	// not serial, when PullOptions.Parallelism is zero.
	DefaultPullParallelism = 4
)

// PullOptions say how EnsureImages makes images present.
type PullOptions struct {
	// Policy is Always (pull every image), IfNotPresent (pull the images
	// the runtime lacks; also when empty) or Never (pull nothing; an image
	// the runtime lacks is an error).
	Policy corev1.PullPolicy
	// Serial settles one image at a time; otherwise up to Parallelism at
	// once.
	Serial      bool
	Parallelism int
	// Attempts is how often a failing pull is tried.
	Attempts int
	// Done, when set, is told of every image settled without error and
	// whether it was pulled (false: it was present). Calls never overlap;
	// with parallel pulls they come in the order the images finish.
	Done func(image string, pulled bool)
}

// EnsureImages makes images present in rt according to o and returns one
// entry per image, in the same order: nil when the image is there, else an
// error naming it. A failure does not stop the other images.
//
// Under IfNotPresent a status query that fails counts as "not present":
// the pull that follows settles the question.
func EnsureImages(ctx context.Context, rt ImagePuller, images []string, o PullOptions) []error {
	attempts := o.Attempts
	if attempts <= 0 {
		attempts = DefaultPullAttempts
	}
	var doneMu sync.Mutex
	settle := func(i int) error {
		pulled, err := ensureImage(ctx, rt, images[i], o.Policy, attempts)
		if err == nil && o.Done != nil {
			doneMu.Lock()
			o.Done(images[i], pulled)
			doneMu.Unlock()
		}
		return err
	}
	errs := make([]error, len(images))
	if o.Serial {
		for i := range images {
			errs[i] = settle(i)
		}
		return errs
	}
	width := o.Parallelism
	if width <= 0 {
		width = DefaultPullParallelism
	}
	sem := make(chan struct{}, width)
	var wg sync.WaitGroup
	for i := range images {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			errs[i] = settle(i)
		}()
	}
	wg.Wait()
	return errs
}

// ensureImage settles one image and tells whether it pulled it.
func ensureImage(ctx context.Context, rt ImagePuller, image string, policy corev1.PullPolicy, attempts int) (bool, error) {
	switch policy {
	case corev1.PullNever:
		present, err := rt.ImagePresent(ctx, image)
		if err != nil {
			return false, fmt.Errorf("could not tell whether image %s is present: %w", image, err)
		}
		if !present {
			return false, fmt.Errorf("image %s is not present and the image pull policy %q forbids pulling it", image, policy)
		}
		return false, nil
	case corev1.PullAlways:
	default:
		if present, err := rt.ImagePresent(ctx, image); err == nil && present {
			return false, nil
		}
	}
	var err error
	for range attempts {
		if err = rt.PullImage(ctx, image); err == nil {
			return true, nil
		}
		if ctx.Err() != nil {
			break
		}
	}
	return false, fmt.Errorf("failed to pull image %s: %w", image, err)
}

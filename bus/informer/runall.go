package informer

import "context"

// Runner is an informer, or anything else that runs until its context
// ends.
type Runner interface {
	Run(ctx context.Context) error
}

// RunAll runs every runner until ctx ends, and returns the first error one
// of them returned before ctx ended.
func RunAll[R Runner](ctx context.Context, rs []R) error {
	errc := make(chan error, len(rs))
	for _, r := range rs {
		go func(r R) { errc <- r.Run(ctx) }(r)
	}
	var first error
	for range rs {
		if err := <-errc; err != nil && first == nil && ctx.Err() == nil {
			first = err
		}
	}
	return first
}

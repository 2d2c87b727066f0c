// Package signals turns SIGINT and SIGTERM into a cancelled context that
// remembers which came; they are caught, never ignored, so what wiggum
// starts can still trap them.
package signals

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

type key struct{}

// Context is cancelled by SIGINT or SIGTERM; stop releases the handler.
func Context() (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	got := new(syscall.Signal)
	ctx = context.WithValue(ctx, key{}, got)
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		select {
		case s := <-ch:
			*got = s.(syscall.Signal)
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, func() { signal.Stop(ch); cancel() }
}

// Caught returns the signal that cancelled ctx (made by Context), or 0.
func Caught(ctx context.Context) syscall.Signal {
	if p, ok := ctx.Value(key{}).(*syscall.Signal); ok && ctx.Err() != nil {
		return *p
	}
	return 0
}

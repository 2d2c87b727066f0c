// Package signals turns SIGINT and SIGTERM into a cancelled context that
// remembers which came; they are caught, never ignored, so what wiggum
// starts can still trap them.
package signals

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"
)

type key struct{}

// caught is what a Context saw: sig is set before the context is
// cancelled, again is closed at the second signal.
type caught struct {
	sig   syscall.Signal
	again chan struct{}
}

// Context is cancelled by SIGINT or SIGTERM; stop releases the handler.
func Context() (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	c := &caught{again: make(chan struct{})}
	ctx = context.WithValue(ctx, key{}, c)
	ch := make(chan os.Signal, 2)
	stopped := make(chan struct{})
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		select {
		case s := <-ch:
			c.sig = s.(syscall.Signal)
			cancel()
		case <-stopped:
			return
		}
		select {
		case <-ch:
			close(c.again)
		case <-stopped:
		}
	}()
	return ctx, func() { signal.Stop(ch); close(stopped); cancel() }
}

// Caught returns the signal that cancelled ctx (made by Context), or 0.
func Caught(ctx context.Context) syscall.Signal {
	if c, ok := ctx.Value(key{}).(*caught); ok && ctx.Err() != nil {
		return c.sig
	}
	return 0
}

// Name is sig as people know it ("SIGTERM"), "" for none.
func Name(sig syscall.Signal) string {
	switch sig {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return ""
}

// Within returns a context that ends after d or at the next SIGINT or
// SIGTERM, whichever comes first: the first signal while ctx (made by
// Context) has caught none, else the second. A wait at the end of a
// command - one that the first signal may have started - is so cut short
// by the user without being lost to the signal that began it.
func Within(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	c, ok := ctx.Value(key{}).(*caught)
	if !ok || ctx.Err() == nil {
		return context.WithTimeout(ctx, d)
	}
	wctx, cancel := context.WithTimeout(context.Background(), d)
	go func() {
		select {
		case <-c.again:
			cancel()
		case <-wctx.Done():
		}
	}()
	return wctx, cancel
}

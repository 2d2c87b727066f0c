package hooks

import (
	"context"
	"fmt"
	"os"

	"github.com/wiggum-dev/wiggum/checkpoint"
	"github.com/wiggum-dev/wiggum/internal/layout"
)

// GitHooks are the git hooks wiggum installs.
var GitHooks = []string{"post-commit", "pre-push"}

// AllowPushEnv lets a push through while a session holds the lock.
const AllowPushEnv = "WIGGUM_ALLOW_PUSH"

// PushRefusedError is the pre-push hook's refusal.
type PushRefusedError struct{ Holder *layout.Holder }

func (e *PushRefusedError) Error() string {
	who := "a wiggum session"
	if e.Holder != nil {
		who = fmt.Sprintf("a wiggum session (pid %d, since %s)", e.Holder.PID, e.Holder.Started.Local().Format("15:04:05"))
	}
	return fmt.Sprintf("push refused: %s holds this repository's agent lock, and an agent must not publish work; push after the session ends, or set %s=1 to push anyway", who, AllowPushEnv)
}

// GitHook runs one git hook. post-commit appends the commit to the journal;
// pre-push refuses while a wiggum session holds the lock. A hook wiggum does
// not implement does nothing.
func GitHook(ctx context.Context, dir, name string) error {
	switch name {
	case "post-commit":
		st, err := checkpoint.Open(ctx, dir)
		if err != nil {
			return err
		}
		return st.RecordCommit(ctx)
	case "pre-push":
		if os.Getenv(AllowPushEnv) == "1" {
			return nil
		}
		root := findRoot(dir)
		if root == "" {
			return nil
		}
		if s := layout.At(root).Session(); !s.Active {
			return nil
		}
		st, err := checkpoint.Open(ctx, root)
		if err != nil {
			return &PushRefusedError{}
		}
		h, _ := st.CurrentHolder()
		return &PushRefusedError{Holder: h}
	}
	return nil
}

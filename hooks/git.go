package hooks

import (
	"context"
	"fmt"
	"os"

	"github.com/wiggum-dev/wiggum/checkpoint"
	"github.com/wiggum-dev/wiggum/internal/layout"
)

// GitHooks are the git hooks wiggum installs. post-merge journals the merge
// commit git merge and git pull make: git runs no post-commit for it.
var GitHooks = []string{"post-commit", "post-merge", "pre-push"}

// AllowPushEnv lets a push through while a session holds the lock (see
// layout.AllowPushEnv for whose setting counts).
const AllowPushEnv = layout.AllowPushEnv

// PushRefusedError is the pre-push hook's refusal. Inside the session
// (Agent: the push comes from one of its processes) it does not tell how
// to override it: that is for the person running the loop, not the agent.
type PushRefusedError struct {
	Holder *layout.Holder
	Agent  bool
}

func (e *PushRefusedError) Error() string {
	who := "a wiggum session"
	if e.Holder != nil {
		who = fmt.Sprintf("a wiggum session (pid %d, since %s)", e.Holder.PID, e.Holder.Started.Local().Format("15:04:05"))
	}
	if e.Agent {
		return fmt.Sprintf("push refused: %s holds this repository's agent lock, and an agent must not publish work; commit locally and leave publishing to the person running the loop", who)
	}
	return fmt.Sprintf("push refused: %s holds this repository's agent lock, and an agent must not publish work; push after the session ends, or set %s=1 to push anyway", who, AllowPushEnv)
}

// GitHook runs one git hook. post-commit appends the commit to the journal,
// post-merge the merge commit git merge made;
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
	case "post-merge":
		st, err := checkpoint.Open(ctx, dir)
		if err != nil {
			return err
		}
		return st.RecordMerge(ctx)
	case "pre-push":
		root := findRoot(dir)
		if root == "" {
			return nil
		}
		s := sessionAt(root)
		if !s.Active {
			return nil
		}
		// From outside the session: the person's own override. From
		// inside: only when the session itself was started with it.
		ours := s.Mine || s.Elsewhere
		if os.Getenv(AllowPushEnv) == "1" && (!ours || s.AllowPush) {
			return nil
		}
		var h *layout.Holder
		held := root
		if s.Elsewhere {
			held = os.Getenv(layout.RootEnv)
		}
		if st, err := checkpoint.Open(ctx, held); err == nil {
			h, _ = st.CurrentHolder()
		}
		return &PushRefusedError{Holder: h, Agent: ours}
	}
	return nil
}

package guard

import "strings"

// gitPush denies publishing: push, send-pack and http-push.
func (w *walk) gitPush(sub string, rest []string) {
	w.g.verdict(Deny, "git %s is not allowed during a wiggum session: commit locally and leave publishing to the person running the loop", sub)
}

// gitSubtree denies git subtree push: it pushes as git push does.
func (w *walk) gitSubtree(rest []string) {
	for _, a := range rest {
		if strings.HasPrefix(a, "-") {
			continue
		}
		if a == "push" {
			w.gitPush("subtree push", rest)
		}
		return
	}
}

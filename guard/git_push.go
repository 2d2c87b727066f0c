package guard

// gitPush denies publishing: push, send-pack and http-push.
func (w *walk) gitPush(sub string, rest []string) {
	w.g.verdict(Deny, "git %s is not allowed during a wiggum session: commit locally and leave publishing to the person running the loop", sub)
}

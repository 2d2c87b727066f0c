package guard

// gitStash denies deleting stashes: clear and drop throw the stashed work
// away.
func (w *walk) gitStash(rest []string) {
	if len(rest) > 0 && (rest[0] == "clear" || rest[0] == "drop") {
		w.g.verdict(Deny, "git stash %s deletes stashed work for good; leave stashes alone (`git stash list` shows them)", rest[0])
	}
}

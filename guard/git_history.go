package guard

// gitRewrite denies rewriting history: filter-branch and filter-repo.
func (w *walk) gitRewrite(sub string) {
	w.g.verdict(Deny, "git %s rewrites history the checkpoint and journal refer to; not allowed during a wiggum session", sub)
}

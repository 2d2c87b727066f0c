package guard

import "slices"

// ProtectedBranches is the rule for the branches nothing may be merged
// into during a session: main, master and the remote's default branch
// (defaultBranch, "" when unknown), which the caller finds.
func ProtectedBranches(defaultBranch string) []string {
	protected := []string{"main", "master"}
	if defaultBranch != "" && !slices.Contains(protected, defaultBranch) {
		protected = append(protected, defaultBranch)
	}
	return protected
}

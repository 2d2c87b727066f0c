// Package stats holds the summaries the benchmark programs in bench/ report,
// so each figure is computed the same way in every one of them.
package stats

import (
	"cmp"
	"slices"
)

// Median is the middle sample (the upper one of an even count), zero for
// none; xs is left as it was.
func Median[T cmp.Ordered](xs []T) T {
	var zero T
	if len(xs) == 0 {
		return zero
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

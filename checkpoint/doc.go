// Package checkpoint owns the rollback point and the backups: it rolls a
// working tree back only when that is provably safe (the ordered rules in
// rules.go, judged before anything is touched), and saves everything a
// rollback discards under refs/wiggum/backup/ before it does. The agent lock
// it runs under belongs to package layout.
package checkpoint

// Package checkpoint owns the agent lock, the rollback point and the backups:
// it rolls a working tree back only when that is provably safe, and saves
// everything a rollback discards under refs/wiggum/backup/ before it does.
package checkpoint

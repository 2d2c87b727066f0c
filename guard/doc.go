// Package guard decides whether a shell command may run during an agent
// session: it parses the command with a real shell parser, looks through
// wrappers and nested shells, and denies what would publish work, destroy
// uncommitted work or history, or tamper with the state, hooks and refs the
// caller's Policy names. It is pure: no process or environment is read, and
// no file but the scripts a command runs, through the Policy's reader.
package guard

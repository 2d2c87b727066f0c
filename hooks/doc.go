// Package hooks answers agent hook events (Claude Code, Codex, Gemini CLI,
// Cursor) and git hooks: it never breaks or hangs the agent, denies
// destructive shell commands during a wiggum session by parsing them with a
// real shell parser, and turns failing test runs into the session's failure
// policy (rollback or record).
package hooks

// Package e2e proves wiggum's process-level guarantees (the agent lock, the
// supervisor, crash safety of state files) by running the real binary as
// several concurrent processes and killing them; it holds only tests.
package e2e

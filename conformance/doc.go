// Package conformance drives the real Claude Code, Codex and Gemini CLIs
// against a scripted model server (conformance/fakemodel) and checks that
// every promise of wiggum's contract holds inside them: the guard's deny
// reaches the model, failing test runs are rolled back and reported,
// `wiggum run` commits with the agent's usage recorded, usage limits are
// recognised, and the pre-push backstop holds in the agents' sandboxes.
// The clients come from conformance/install-clients.sh.
package conformance

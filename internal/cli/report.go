package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/wiggum-dev/wiggum/internal/badinput"
	"github.com/wiggum-dev/wiggum/internal/layout"
	runreport "github.com/wiggum-dev/wiggum/internal/report"
	"github.com/wiggum-dev/wiggum/internal/statefile"
)

// ReportCmd is `wiggum report`.
type ReportCmd struct {
	JSON   bool   `name:"json" xor:"format" help:"JSON with stable keys (see the keys above)."`
	HTML   bool   `name:"html" xor:"format" help:"One self-contained HTML page with a timeline and the cost table: on stdout, or with -o (or on a terminal) in a file whose path is printed."`
	Output string `short:"o" name:"output" placeholder:"FILE" help:"Write the report to FILE and print its path."`
	Events string `name:"events" placeholder:"FILE" type:"existingfile" help:"Read this event log (a copy from another machine, say) instead of the repository's."`
	File   string `arg:"" optional:"" placeholder:"FILE" help:"Same as -o FILE (so --html FILE works)."`
}

// Help is shown by `wiggum report --help`.
func (c *ReportCmd) Help() string {
	return `Tells what the latest run did (during the run, as far as it has got), story
by story: attempts with their worker, times and outcome; time, tokens and cost
with retries included; the backups of rolled-back attempts to look at
(refs/wiggum/backup/...) and the branches kept because they could not merge;
what the agents left in git and what wiggum did about it (packages, secrets
and large files left out, their own commits made again without them,
repositories of their own, branches they left, test files a story's changes
delete). A run that resumed a killed one includes what the killed run did. It reads
only .ralph/wiggum/events.jsonl: it takes no lock and changes nothing.

--html draws the run as a timeline (a bar per attempt on its worker's lane,
failed attempts crossed, rollbacks, merges, conflicts, guard denials and
usage-limit waits marked) above the cost table, in one file with no scripts
and nothing fetched from the network. On a terminal, without -o, it is
written to .ralph/wiggum/report.html.

JSON keys: plan, agent, started, ended, outcome (done, stopped, interrupted,
running, unfinished), error, workers, plan_stories, resumed, totals {stories,
done, failed, not_merged, open, attempts, failed_attempts, seconds,
input_tokens, output_tokens, cost_usd}, stories [{id, title, outcome (done,
failed, not merged, running, open; a run that ended lists the open stories
it never reached too, with no attempts), attempts [{iteration, number, worker,
start, end, outcome, commit, backup, input_tokens, output_tokens, cost_usd}],
seconds, input_tokens, output_tokens, cost_usd, backups, kept_branch,
conflict_paths, merge_error, merged, commit, skip_reason}], limit_waits
[{start, end, message}], guard_denials [{time, story, decision, command,
reason}], git_notes [{time, story, text}], test_failures_seen,
log_lines_skipped. Every key is always there (an empty list is [], an empty
text "") but for the times of what has not happened: ended (absent
while the run runs), a story's merged (absent until it lands) and an
attempt's or a wait's end (absent while it runs).

Exit: 0 reported; 1 no run recorded yet, or the log cannot be read.

  wiggum report
  wiggum report --json | jq '.stories[] | select(.outcome != "done") | .id'
  wiggum report --html -o run.html       # or: wiggum report --html run.html
  wiggum report --html > run.html
  wiggum report --events copied-events.jsonl`
}

// reportFile is where --html goes on a terminal without -o.
const reportFile = layout.RuntimeDir + "/report.html"

// Run writes the report.
func (c *ReportCmd) Run(ctx context.Context, g *Globals) error {
	if c.File != "" && c.Output != "" {
		return badinput.Errorf("report: give the output file once, as -o FILE or as FILE")
	}
	if c.File != "" {
		c.Output = c.File
	}
	path := c.Events
	alive := func(int) bool { return true } // another machine's run: cannot tell
	var root string
	if path == "" {
		var err error
		root, err = mainRoot(ctx, g.WorkDir())
		if err != nil {
			return badinput.Wrap(err)
		}
		path = filepath.Join(root, filepath.FromSlash(layout.RuntimeDir), layout.EventFile)
		alive = runAlive(root)
	}
	r, err := runreport.Build(path, runreport.Options{Alive: alive})
	if errors.Is(err, runreport.ErrNoRun) {
		return fmt.Errorf("report: %s: %w", path, err)
	}
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	var buf bytes.Buffer
	switch {
	case c.JSON:
		err = runreport.WriteJSON(&buf, r)
	case c.HTML:
		err = runreport.WriteHTML(&buf, r, time.Now())
	default:
		err = runreport.WriteText(&buf, r)
	}
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	out := c.Output
	if out == "" && c.HTML && isTerminal(g.stdout) && root != "" {
		out = filepath.Join(root, filepath.FromSlash(reportFile))
	}
	if out == "" {
		_, err := g.stdout.Write(buf.Bytes())
		return err
	}
	abs, err := filepath.Abs(out)
	if err != nil {
		return badinput.Errorf("report: -o %s: %v", out, err)
	}
	if err := statefile.Write(abs, buf.Bytes()); err != nil {
		return fmt.Errorf("report: write %s: %w", abs, err)
	}
	fmt.Fprintln(g.stdout, abs)
	return nil
}

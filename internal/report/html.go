package report

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/wiggum-dev/wiggum/internal/termtext"
)

// WriteHTML writes r as one self-contained page: inline CSS, an inline SVG
// timeline, no script and nothing fetched from anywhere. Every string from
// the log is escaped by html/template (the page) or package svg (the
// timeline). The page is also well-formed XML.
func WriteHTML(w io.Writer, r *Report, generated time.Time) error {
	start, end := r.Span()
	v := page{R: r, Timeline: template.HTML(Timeline(r)), Generated: generated.UTC().Format("2006-01-02 15:04:05 UTC"),
		Started: start.UTC().Format("2006-01-02 15:04:05 UTC"), Duration: Dur(end.Sub(start).Seconds())}
	t := r.Totals
	v.Cards = []card{
		{"Stories done", fmt.Sprintf("%d / %d", t.Done, t.Stories), ""},
		{"Failed / not merged", fmt.Sprintf("%d / %d", t.Failed, t.Unmerged), warnIf(t.Failed+t.Unmerged > 0)},
		{"Attempts", fmt.Sprintf("%d", t.Attempts), ""},
		{"Failed attempts", fmt.Sprintf("%d", t.Failures), warnIf(t.Failures > 0)},
		{"Tokens in / out", Tokens(t.InputTokens) + " / " + Tokens(t.OutputTokens), ""},
		{"Cost", USD(t.CostUSD), ""},
		{"Wall time", v.Duration, ""},
	}
	maxCost := 0.0
	for _, s := range r.Stories {
		maxCost = max(maxCost, s.CostUSD)
	}
	for _, s := range r.Stories {
		row := storyRow{S: s, Time: Dur(s.Seconds), In: Tokens(s.InputTokens), Out: Tokens(s.OutputTokens), Cost: USD(s.CostUSD),
			Class: outcomeClass(s.Outcome)}
		share := 0.0
		if maxCost > 0 {
			share = 100 * s.CostUSD / maxCost
		}
		row.Bar = template.CSS(fmt.Sprintf("width: %.1f%%", share))
		for _, a := range s.Attempts {
			row.Marks = append(row.Marks, mark{Class: outcomeClass(a.Outcome), Tip: fmt.Sprintf("attempt %d: %s", a.Number, a.Outcome)})
		}
		v.Rows = append(v.Rows, row)
	}
	v.TotalTime, v.TotalIn, v.TotalOut, v.TotalCost = Dur(t.Seconds), Tokens(t.InputTokens), Tokens(t.OutputTokens), USD(t.CostUSD)
	v.Look = lookAt(r)
	for _, wt := range r.Waits {
		d := "still waiting"
		if !wt.End.IsZero() {
			d = Dur(wt.End.Sub(wt.Start).Seconds())
		}
		v.WaitRows = append(v.WaitRows, [3]string{wt.Start.UTC().Format("15:04:05"), d, wt.Message})
	}
	var buf bytes.Buffer
	if err := pageTmpl().Execute(&buf, v); err != nil {
		return err
	}
	// html/template escapes markup but passes control characters through;
	// neither HTML nor XML may hold them, and bidi controls would show a
	// title in another order than it is: replaced as the terminal views
	// replace them. The template itself has none but newlines.
	_, err := io.WriteString(w, strings.Map(func(r rune) rune {
		if r != '\n' && r != '\t' && termtext.Replaced(r) {
			return '\uFFFD'
		}
		return r
	}, buf.String()))
	return err
}

type page struct {
	R                                       *Report
	Timeline                                template.HTML
	Generated, Started, Duration            string
	Cards                                   []card
	Rows                                    []storyRow
	TotalTime, TotalIn, TotalOut, TotalCost string
	Look                                    []look
	WaitRows                                [][3]string
}

type card struct{ Label, Value, Class string }

type storyRow struct {
	S                   *Story
	Time, In, Out, Cost string
	Class               string
	Bar                 template.CSS
	Marks               []mark
}

type mark struct{ Class, Tip string }

func warnIf(b bool) string {
	if b {
		return "warn"
	}
	return ""
}

func outcomeClass(outcome string) string {
	switch {
	case outcome == StoryDone:
		return "ok"
	case outcome == StoryFailed, outcome == StoryUnmerged, strings.HasPrefix(outcome, "failed"):
		return "bad"
	case outcome == "usage limit":
		return "limit"
	case outcome == StoryRunning:
		return "run"
	}
	return "idle"
}

// pageTmpl is parsed on first use, not at init: every wiggum process (each
// hook call) would otherwise parse it.
var pageTmpl = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("report").Funcs(template.FuncMap{
		"clock": func(t time.Time) string { return t.UTC().Format("15:04:05") },
	}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8"/>
<meta name="viewport" content="width=device-width, initial-scale=1"/>
<meta name="generator" content="wiggum report"/>
<title>wiggum report: {{.R.Plan}}</title>
<style>
:root { --ink: #1f242b; --muted: #5f6774; --line: #e3e6ea; --bg: #f3f4f6; --card: #ffffff;
  --ok: ` + colDone + `; --bad: ` + colFailed + `; --limit: ` + colLimit + `; --run: ` + colRunning + `; --idle: ` + colStopped + `; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--ink); font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; }
main { max-width: 1300px; margin: 0 auto; padding: 20px 28px 40px; }
h1 { font-size: 22px; margin: 0 0 4px; }
h1 small { font-weight: 500; color: var(--muted); font-size: 15px; }
h2 { font-size: 16px; margin: 0 0 10px; }
.sub { color: var(--muted); margin: 0 0 16px; }
.badge { display: inline-block; padding: 1px 9px; border-radius: 10px; font-size: 12px; font-weight: 600; color: #fff; background: var(--idle); vertical-align: 2px; }
.badge.ok { background: var(--ok); } .badge.bad { background: var(--bad); } .badge.limit { background: var(--limit); } .badge.run { background: var(--run); }
.cards { display: flex; flex-wrap: wrap; gap: 10px; margin-bottom: 16px; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 8px 14px; min-width: 140px; }
.card b { display: block; font-size: 20px; }
.card span { color: var(--muted); font-size: 12px; }
.card.warn b { color: var(--bad); }
section { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 14px 16px; margin-bottom: 16px; overflow-x: auto; }
svg { display: block; max-width: 100%; height: auto; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: 5px 10px; border-bottom: 1px solid var(--line); vertical-align: middle; }
th { font-size: 12px; color: var(--muted); font-weight: 600; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
tfoot td { font-weight: 700; border-bottom: none; }
.title { max-width: 360px; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.marks i { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 2px; background: var(--idle); }
.marks i.ok { background: var(--ok); } .marks i.bad { background: var(--bad); } .marks i.limit { background: var(--limit); } .marks i.run { background: var(--run); }
.bar { width: 120px; height: 8px; background: #edf0f3; border-radius: 4px; display: inline-block; vertical-align: middle; margin-left: 8px; }
.bar span { display: block; height: 8px; border-radius: 4px; background: #5b6bd6; }
code { font: 12.5px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; background: #f1f3f5; padding: 1px 5px; border-radius: 4px; }
ul { margin: 0; padding-left: 18px; }
li { margin: 3px 0; }
footer { color: var(--muted); font-size: 12px; }
</style>
</head>
<body>
<main>
<h1>wiggum run report <small>{{.R.Plan}}</small></h1>
<p class="sub">started {{.Started}} · {{.Duration}}{{if gt .R.Workers 1}} · {{.R.Workers}} workers{{end}}{{if .R.Agent}} · agent <code>{{.R.Agent}}</code>{{end}}{{if .R.Resumed}} · resumed{{end}}
 · <span class="badge {{if eq .R.Outcome "done"}}ok{{else if eq .R.Outcome "running"}}run{{else}}bad{{end}}">{{.R.Outcome}}</span>{{if eq .R.Outcome "interrupted"}} by a signal{{else if .R.Error}} {{.R.Error}}{{end}}</p>
<div class="cards">{{range .Cards}}<div class="card {{.Class}}"><b>{{.Value}}</b><span>{{.Label}}</span></div>{{end}}</div>
<section>
<h2>Timeline</h2>
{{.Timeline}}
</section>
<section>
<h2>Stories and cost (retries included)</h2>
<table>
<thead><tr><th>Story</th><th>Title</th><th>Outcome</th><th>Attempts</th><th class="n">Time</th><th class="n">Tokens in</th><th class="n">Tokens out</th><th class="n">Cost</th></tr></thead>
<tbody>
{{range .Rows}}<tr><td><b>{{.S.ID}}</b></td><td class="title" title="{{.S.Title}}">{{.S.Title}}</td><td><span class="badge {{.Class}}">{{.S.Outcome}}</span></td><td class="marks">{{range .Marks}}<i class="{{.Class}}" title="{{.Tip}}"></i>{{end}} {{len .S.Attempts}}</td><td class="n">{{.Time}}</td><td class="n">{{.In}}</td><td class="n">{{.Out}}</td><td class="n">{{.Cost}}<span class="bar"><span style="{{.Bar}}"></span></span></td></tr>
{{end}}</tbody>
<tfoot><tr><td>Total</td><td>{{.R.Totals.Stories}} stories{{if gt .R.PlanStories .R.Totals.Stories}} (of {{.R.PlanStories}} in the plan){{end}}</td><td></td><td>{{.R.Totals.Attempts}}</td><td class="n">{{.TotalTime}}</td><td class="n">{{.TotalIn}}</td><td class="n">{{.TotalOut}}</td><td class="n">{{.TotalCost}}<span class="bar"></span></td></tr></tfoot>
</table>
</section>
{{if .Look}}<section>
<h2>To look at</h2>
<ul>{{range .Look}}<li><code>{{.Cmd}}</code> {{.Why}}</li>{{end}}</ul>
</section>{{end}}
{{if .WaitRows}}<section>
<h2>Waits: usage limits and model-service outages</h2>
<ul>{{range .WaitRows}}<li>{{index . 0}} · {{index . 1}} · {{index . 2}}</li>{{end}}</ul>
</section>{{end}}
{{if .R.GitNotes}}<section>
<h2>What the agents left in git, and what wiggum did about it</h2>
<ul>{{range .R.GitNotes}}{{if .Time.IsZero}}<li>{{.Text}}</li>{{else}}<li>{{clock .Time}} {{.Story}} {{.Text}}</li>{{end}}{{end}}</ul>
</section>{{end}}
{{if .R.Denials}}<section>
<h2>Guard denials</h2>
<ul>{{range .R.Denials}}{{if eq .Decision "more"}}<li>{{.Reason}}</li>{{else}}<li>{{clock .Time}} {{.Story}} <code>{{.Command}}</code> {{.Reason}}</li>{{end}}{{end}}</ul>
</section>{{end}}
<footer>Generated by wiggum report at {{.Generated}} from the run's event log.{{if .R.Skipped}} {{.R.Skipped}} unreadable line(s) of the log were skipped.{{end}}{{if .R.TestFail}} The agent hooks saw {{.R.TestFail}} failing test run(s) mid-attempt.{{end}}</footer>
</main>
</body>
</html>
`))
})

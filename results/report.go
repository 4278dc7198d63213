package results

import (
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/splitbrain/splitbrain/checkers"
)

var funcs = template.FuncMap{
	// A verdict reads in words, not only in colour.
	"verdict": checkers.Validity.String,
	"seconds": func(ns int64) string { return fmt.Sprintf("%.3f s", float64(ns)/1e9) },
	"figure": func(v float64) string {
		if v == float64(int64(v)) {
			return fmt.Sprintf("%d", int64(v))
		}
		return fmt.Sprintf("%.3f", v)
	},
	"sortedKeys": func(m map[string]float64) []string {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return keys
	},
	"join": strings.Join,
}

const style = `body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px solid #ccc;padding:.25em .6em;text-align:left;vertical-align:top}
.valid{background:#d8f5d0}.invalid{background:#f9d0d0}.unknown{background:#f7ecc4}
.verdict{font-size:1.6em;padding:.3em .6em;display:inline-block;border-radius:4px}code{background:#f3f3f3;padding:0 .2em}`

var reportTmpl = template.Must(template.New("report").Funcs(funcs).Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>splitbrain {{.Info.ID}}: {{verdict .Report.Valid}}</title><style>` + style + `</style></head><body>
<h1>splitbrain run {{.Info.ID}}</h1>
<p><span class="verdict {{verdict .Report.Valid}}">{{verdict .Report.Valid}}</span></p>
<table>
<tr><th>target</th><td>{{.Info.Target}} (promise: {{.Info.Promise}})</td></tr>
<tr><th>seed</th><td>{{.Info.Seed}}</td></tr>
<tr><th>started</th><td>{{.Info.Started}}</td></tr>
<tr><th>reproduce</th><td><code>{{.Info.Command}}</code></td></tr>
{{if .Info.Interrupted}}<tr><th>interrupted</th><td>the run was stopped before its time limit; the verdict covers the history recorded until then</td></tr>{{end}}
{{if .Info.Error}}<tr><th>harness error</th><td>{{.Info.Error}}</td></tr>{{end}}
</table>
<h2>Checkers</h2>
<table><tr><th>checker</th><th>verdict</th><th>figures</th><th>note</th></tr>
{{range $name, $r := .Report.Checkers}}<tr><td>{{$name}}</td><td class="{{verdict $r.Valid}}">{{verdict $r.Valid}}</td>
<td>{{range $k := sortedKeys $r.Figures}}{{$k}}: {{figure (index $r.Figures $k)}}<br>{{end}}</td><td>{{$r.Note}}</td></tr>
{{end}}</table>
<h2>Violations</h2>
{{$any := false}}{{range $name, $r := .Report.Checkers}}{{range $r.Violations}}{{$any = true}}
<p class="invalid"><b>{{$name}}</b> ({{.Kind}}) at {{seconds .Time}}: {{.Message}}{{if .Events}} <small>events {{.Events}}</small>{{end}}{{if .Seqs}} <small>resource seqs {{.Seqs}}</small>{{end}}</p>
{{end}}{{end}}{{if not $any}}<p>None.</p>{{end}}
<h2>Timings and throughput</h2>
<table>
<tr><th>image build</th><td>{{printf "%.2f" .Info.Timings.ImageBuild}} s</td></tr>
<tr><th>cluster start (all healthy)</th><td>{{printf "%.2f" .Info.Timings.ClusterStart}} s</td></tr>
<tr><th>workload</th><td>{{printf "%.1f" .Info.Timings.Workload}} s</td></tr>
<tr><th>teardown</th><td>{{printf "%.2f" .Info.Timings.Teardown}} s</td></tr>
<tr><th>check</th><td>{{printf "%.2f" .Info.Timings.Check}} s</td></tr>
<tr><th>ops/s asked / issued / completed</th><td>{{printf "%.0f" .Info.Timings.RequestedRate}} / {{printf "%.1f" .Info.Timings.AchievedRate}} / {{printf "%.1f" .Info.Timings.CompletedRate}}</td></tr>
<tr><th>ops ok / failed / indeterminate / not issued</th><td>{{.Info.Timings.OpsOK}} / {{.Info.Timings.OpsFailed}} / {{.Info.Timings.OpsUnknown}} / {{.Info.Timings.OpsNotIssued}}</td></tr>
<tr><th>history events</th><td>{{.Info.Timings.Events}}</td></tr>
</table>
<h2>Files</h2>
<ul><li><a href="history.jsonl">history.jsonl</a></li><li><a href="resource.jsonl">resource.jsonl</a></li><li><a href="results.json">results.json</a></li><li><a href="run.json">run.json</a></li>
{{range .Logs}}<li><a href="logs/{{.}}">logs/{{.}}</a></li>{{end}}</ul>
</body></html>
`))

// WriteReport renders report.html into a run's folder.
func WriteReport(dir string, info Info, report checkers.Report) error {
	entries, _ := os.ReadDir(filepath.Join(dir, LogsDir))
	var logs []string
	for _, e := range entries {
		logs = append(logs, e.Name())
	}
	return writeTemplate(filepath.Join(dir, ReportFile), reportTmpl, map[string]any{
		"Info": info, "Report": report, "Logs": logs,
	})
}

var indexTmpl = template.Must(template.New("index").Funcs(funcs).Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>splitbrain runs</title><style>` + style + `</style></head><body>
<h1>splitbrain runs</h1>
<table><tr><th>run</th><th>target</th><th>nemesis</th><th>seed</th><th>verdict</th><th>violations</th><th>duration</th></tr>
{{range .}}<tr><td><a href="{{.Info.ID}}/report.html">{{.Info.ID}}</a></td><td>{{.Info.Target}}</td><td>{{.Nemesis}}</td><td>{{.Info.Seed}}</td>
<td class="{{verdict .Report.Valid}}">{{verdict .Report.Valid}}</td><td>{{.Violations}}</td><td>{{printf "%.0f" .Info.Timings.Total}} s</td></tr>
{{end}}</table></body></html>
`))

// WriteIndex rewrites results/index.html, newest run first.
func WriteIndex(s Store) error {
	runs, err := s.Runs()
	if err != nil {
		return err
	}
	type row struct {
		Info       Info
		Report     checkers.Report
		Nemesis    string
		Violations int
	}
	rows := make([]row, 0, len(runs))
	for _, info := range runs {
		r := row{Info: info}
		_ = ReadJSON(filepath.Join(s.Root, info.ID, ResultsFile), &r.Report) // no results yet: unknown
		for _, c := range r.Report.Checkers {
			r.Violations += len(c.Violations)
		}
		if cfg, ok := info.Config.(map[string]any); ok {
			r.Nemesis = fmt.Sprint(cfg["nemesis"])
		}
		rows = append(rows, r)
	}
	return writeTemplate(filepath.Join(s.Root, IndexFile), indexTmpl, rows)
}

func writeTemplate(path string, t *template.Template, data any) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if err := t.Execute(f, data); err != nil {
		f.Close()
		return fmt.Errorf("%s: %v", filepath.Base(path), err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

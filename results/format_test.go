package results

import (
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/splitbrain/splitbrain/checkers"
	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/history"
	"github.com/splitbrain/splitbrain/nemesis"
)

// formatsDir holds a results folder per store format, format-N, each with
// runs that splitbrain stored in format N (see its README.md).
const formatsDir = "testdata/formats"

// storedRun is a run of testdata/formats.
type storedRun struct {
	format int
	root   string // its results folder
	id     string
}

func (r storedRun) dir() string { return filepath.Join(r.root, r.id) }

// storedRuns are the runs of every format, oldest format first.
func storedRuns(t *testing.T) []storedRun {
	t.Helper()
	var runs []storedRun
	for format := 1; format <= Format; format++ {
		root := filepath.Join(formatsDir, fmt.Sprintf("format-%d", format))
		entries, err := os.ReadDir(root)
		if err != nil {
			t.Fatalf("no runs of store format %d: %v (keep a run of each format, see %s/README.md)", format, err, formatsDir)
		}
		for _, e := range entries {
			if e.IsDir() {
				runs = append(runs, storedRun{format: format, root: root, id: e.Name()})
			}
		}
	}
	return runs
}

// Every format the store has had has a run stored in it, and each reads
// as the format it was stored in.
func TestEveryFormatHasAStoredRun(t *testing.T) {
	counts := map[int]int{}
	for _, r := range storedRuns(t) {
		info, err := ReadInfo(r.dir())
		if err != nil {
			t.Fatalf("%s: %v", r.dir(), err)
		}
		if info.Format != r.format || info.ID != r.id {
			t.Errorf("%s reads as format %d, id %q", r.dir(), info.Format, info.ID)
		}
		counts[r.format]++
	}
	for format := 1; format <= Format; format++ {
		if counts[format] == 0 {
			t.Errorf("no run of store format %d in %s", format, formatsDir)
		}
	}
}

// The run of today's format holds no field today's types do not know: it
// was made by today's code, not an older one's.
func TestTodaysStoredRunIsTodaysFormat(t *testing.T) {
	for _, r := range storedRuns(t) {
		if r.format != Format {
			continue
		}
		for name, v := range map[string]any{RunFile: &Info{}, ResultsFile: &storedReport{}} {
			b, err := os.ReadFile(filepath.Join(r.dir(), name))
			if err != nil {
				t.Fatal(err)
			}
			dec := json.NewDecoder(strings.NewReader(string(b)))
			dec.DisallowUnknownFields()
			if err := dec.Decode(v); err != nil {
				t.Errorf("%s of %s: %v", name, r.dir(), err)
			}
		}
	}
}

// Today's code judges each stored run as the version that stored it did,
// checker by checker (today's has checkers some older ones lacked), and
// renders its report.
func TestStoredRunsJudgedAgain(t *testing.T) {
	for _, r := range storedRuns(t) {
		t.Run(r.id, func(t *testing.T) {
			then, err := ReadResults(r.dir())
			if err != nil {
				t.Fatal(err)
			}
			root := t.TempDir()
			if err := CopyRun(r.root, root, r.id); err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(root, r.id)
			info, err := ReadInfo(dir)
			if err != nil {
				t.Fatal(err)
			}
			promise, err := contract.ParsePromise(info.Promise)
			if err != nil {
				t.Fatal(err)
			}
			now, events, err := Analyze(dir, promise, info.Config.ObserveInterval, info.Config.CheckOptions(), info.Error)
			if err != nil {
				t.Fatal(err)
			}
			if now.Valid != then.Valid {
				t.Errorf("judged %s today, %s by the version that stored it", now.Valid, then.Valid)
			}
			for name, res := range then.Checkers {
				if got := now.Checkers[name].Valid; got != res.Valid {
					t.Errorf("%s: %s today, %s then", name, got, res.Valid)
				}
			}
			if rewritten, err := ReadResults(dir); err != nil || rewritten.Valid != now.Valid {
				t.Errorf("results.json rewritten as %v (%v)", rewritten.Valid, err)
			}
			if err := WriteReport(dir, info, now, events); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// The index and its trend list every stored run, of every format, with
// the verdict its results.json holds.
func TestIndexReadsEveryFormat(t *testing.T) {
	s := Store{Root: t.TempDir()}
	runs := storedRuns(t)
	for _, r := range runs {
		if err := CopyRun(r.root, s.Root, r.id); err != nil {
			t.Fatal(err)
		}
	}
	trend, list := writtenIndex(t, s)
	for _, r := range runs {
		report, err := ReadResults(r.dir())
		if err != nil {
			t.Fatal(err)
		}
		verdict := report.Valid.String()
		if !strings.Contains(trend, fmt.Sprintf(`<a class="%s" href="%s/report.html"`, verdict, r.id)) {
			t.Errorf("the trend lacks %s (format %d) as %s", r.id, r.format, verdict)
		}
		row := regexp.MustCompile(`(?s)<a href="` + regexp.QuoteMeta(r.id) + `/report.html">.*?<span class="pill (\w+)">`).FindStringSubmatch(list)
		if row == nil || row[1] != verdict {
			t.Errorf("the index lists %s (format %d) as %v, want %s", r.id, r.format, row, verdict)
		}
	}
}

// Format 1's schedule in each of its forms reads as today's schedule.
func TestReadInfoOfFormat1Schedules(t *testing.T) {
	for _, c := range []struct {
		name, schedule string
		want           nemesis.Schedule
	}{
		{"before the nemesis had a plan", ``, nemesis.Schedule{}},
		{"a list of steps", `,"schedule":[{"at":3000000000,"fault":"partition-all","heal":false},{"at":4500000000,"fault":"partition-all","heal":true},{"at":6000000000,"fault":"kill-one","heal":false}]`,
			nemesis.Schedule{Faults: []string{"partition-all", "kill-one"}, Steps: []nemesis.Step{
				{At: 3 * time.Second, Fault: "partition-all"}, {At: 4500 * time.Millisecond, Fault: "partition-all", Heal: true}, {At: 6 * time.Second, Fault: "kill-one"},
			}}},
		{"an object", `,"schedule":{"faults":["pause-one"],"pace":{"settle":1,"wait":2,"react":3,"hold":4}}`,
			nemesis.Schedule{Faults: []string{"pause-one"}, Pace: &nemesis.Pace{Settle: 1, Wait: 2, React: 3, Hold: 4}}},
	} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, RunFile), []byte(`{"id":"r","config":{"nodes":3,"nemesis_interval":3000000000}`+c.schedule+`}`), 0o644)
		info, err := ReadInfo(dir)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if info.Format != 1 || info.ID != "r" || !reflect.DeepEqual(info.Schedule, c.want) {
			t.Errorf("%s: format %d, id %q, schedule %+v, want %+v", c.name, info.Format, info.ID, info.Schedule, c.want)
		}
		if cfg := info.Config; cfg.Nodes != 3 || cfg.NemesisInterval != 3*time.Second || cfg.Rate != DefaultSettings().Rate {
			t.Errorf("%s: config %+v, want its own nodes and interval, the rest default", c.name, cfg)
		}
	}
}

// A file of a format newer than this splitbrain is refused, saying to
// upgrade; one of a format no splitbrain writes is refused too.
func TestNewerFormatRefused(t *testing.T) {
	dir := t.TempDir()
	newer := fmt.Sprintf(`{"format":%d,"id":"r","schedule":{"plan":"of the future"}}`, Format+1)
	for _, name := range []string{RunFile, ResultsFile, SuiteFile} {
		os.WriteFile(filepath.Join(dir, name), []byte(newer), 0o644)
	}
	_, errInfo := ReadInfo(dir)
	_, errResults := ReadResults(dir)
	_, errSuite := ReadSuite(dir)
	for _, err := range []error{errInfo, errResults, errSuite} {
		var nf *NewerFormatError
		if !errors.As(err, &nf) || nf.Format != Format+1 || !strings.HasSuffix(err.Error(), "upgrade splitbrain") || strings.Contains(err.Error(), "\n") {
			t.Errorf("a newer format read as %v, want one line saying to upgrade", err)
		}
	}
	os.WriteFile(filepath.Join(dir, RunFile), []byte(`{"format":-1,"id":"r"}`), 0o644)
	if _, err := ReadInfo(dir); err == nil || !strings.Contains(err.Error(), "format -1") {
		t.Errorf("format -1 read as %v", err)
	}
}

// The files of the store, by the Go type each is written from.
var storeFiles = []struct {
	name string
	of   any
}{
	{RunFile, Info{}},
	{HistoryFile, history.Event{}},
	{ResourceFile, history.Decision{}},
	{ResultsFile, storedReport{}},
	{SuiteFile, Suite{}},
}

// The schema of the store's files is the one recorded for today's format:
// a change of what they hold (a field added, removed, renamed or retyped)
// without a new format would leave older stores unread, or misread. The
// -update flag records the schema of a format that has none, and never
// rewrites one.
func TestStoreSchemaIsTheFormats(t *testing.T) {
	var got []string
	for _, f := range storeFiles {
		var lines []string
		describe(t, &lines, "", reflect.TypeOf(f.of))
		for _, l := range lines {
			got = append(got, f.name+" "+l)
		}
	}
	slices.Sort(got)
	path := filepath.Join(formatsDir, fmt.Sprintf("schema-%d.golden", Format))
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && *update {
		if err := os.WriteFile(path, []byte(strings.Join(got, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err != nil {
		t.Fatalf("%v: store format %d has no recorded schema (go test -run %s -update records it)", err, Format, t.Name())
	}
	want := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	var diff []string
	for _, l := range got {
		if !slices.Contains(want, l) {
			diff = append(diff, "today:    "+l)
		}
	}
	for _, l := range want {
		if !slices.Contains(got, l) {
			diff = append(diff, fmt.Sprintf("format %d: %s", Format, l))
		}
	}
	if len(diff) > 0 {
		t.Errorf(`the store's files differ from store format %d as %s records it:
	%s
A change of what the store holds is a new format: raise results.Format, record
its schema (go test ./results -run %s -update), store a run made by
the code before the change under %s/format-%d, make the readers read it
into today's types, and write the change in docs/contract.md.`, Format, path, strings.Join(diff, "\n\t"), t.Name(), formatsDir, Format)
	}
}

// jsonForms are the JSON forms of the types that write themselves.
var jsonForms = map[reflect.Type]string{
	reflect.TypeFor[time.Time]():         "string (RFC 3339 time)",
	reflect.TypeFor[checkers.Validity](): `true, false or "unknown"`,
}

// describe adds a line per JSON field of struct type st, at path: its
// name, its JSON type, and whether it is left out when empty. Fields of
// objects in it follow as path.field, of arrays' objects as path[].field,
// of maps' objects as path{}.field.
func describe(t *testing.T, lines *[]string, path string, st reflect.Type) {
	t.Helper()
	for i := range st.NumField() {
		f := st.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		if f.Anonymous && name == "" {
			describe(t, lines, path, f.Type)
			continue
		}
		if name == "" {
			name = f.Name
		}
		form, inner, nested := jsonForm(t, f.Type)
		line := path + name + " " + form
		if strings.Contains(","+opts+",", ",omitempty,") {
			line += ", omitempty"
		}
		*lines = append(*lines, line)
		if inner != nil {
			describe(t, lines, path+name+nested, inner)
		}
	}
}

// jsonForm is how a value of type ty is written in JSON, and the struct
// type inside it whose fields describe goes on with, after nested.
func jsonForm(t *testing.T, ty reflect.Type) (form string, inner reflect.Type, nested string) {
	t.Helper()
	if form, ok := jsonForms[ty]; ok {
		return form, nil, ""
	}
	marshaler, text := reflect.TypeFor[json.Marshaler](), reflect.TypeFor[encoding.TextMarshaler]()
	if ty.Implements(marshaler) || reflect.PointerTo(ty).Implements(marshaler) || ty.Implements(text) {
		t.Fatalf("%s writes its own JSON: say its form in jsonForms", ty)
	}
	switch ty.Kind() {
	case reflect.Bool:
		return "boolean", nil, ""
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer", nil, ""
	case reflect.Float32, reflect.Float64:
		return "number", nil, ""
	case reflect.String:
		return "string", nil, ""
	case reflect.Struct:
		return "object", ty, "."
	case reflect.Pointer:
		form, inner, nested := jsonForm(t, ty.Elem())
		return form + " or null", inner, nested
	case reflect.Slice:
		if ty.Elem().Kind() == reflect.Uint8 {
			return "string (base64)", nil, ""
		}
		form, inner, nested := jsonForm(t, ty.Elem())
		return "array of " + form, inner, "[]" + nested
	case reflect.Map:
		form, inner, nested := jsonForm(t, ty.Elem())
		return "object of " + form, inner, "{}" + nested
	}
	t.Fatalf("%s has no JSON form describe knows", ty)
	return "", nil, ""
}

package targets

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRepositoryTargetsLoad(t *testing.T) {
	all, err := List(".")
	if err != nil {
		t.Fatal(err)
	}
	m, err := Find(".", "raft")
	if err != nil {
		t.Fatalf("raft: %v (have %d targets)", err, len(all))
	}
	if m.Port != DefaultPort || m.Build.Go == "" || m.Promise == "" || !filepath.IsAbs(m.Dir) {
		t.Errorf("raft manifest: %+v", m)
	}
}

func TestUnknownTargetNamesTheKnownOnes(t *testing.T) {
	_, err := Find(".", "paxos")
	if err == nil || !strings.Contains(err.Error(), "raft") {
		t.Fatalf("got %v", err)
	}
}

func TestManifestErrors(t *testing.T) {
	for name, body := range map[string]string{
		"no name":    "build: {go: ./x}\npromise: fenced\n",
		"no build":   "name: x\npromise: fenced\n",
		"no promise": "name: x\nbuild: {go: ./x}\n",
		"bad port":   "name: x\nbuild: {go: ./x}\npromise: fenced\nport: 70000\n",
		"not yaml":   "name: [x\n",
	} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, ManifestFile), []byte(body), 0o644)
		if _, err := Load(dir); err == nil {
			t.Errorf("%s: loaded", name)
		}
	}
	if _, err := Load(t.TempDir()); err == nil || !strings.Contains(err.Error(), ManifestFile) {
		t.Errorf("missing manifest: %v", err)
	}
}

// Package targets finds and reads the manifests of the implementations under test.
package targets

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// ManifestFile is the name of a target's manifest inside its folder.
const ManifestFile = "target.yaml"

// DefaultPort is the node API port when a manifest names none.
const DefaultPort = 7070

// Manifest describes one target: how to build its node image and what it
// promises about leadership.
type Manifest struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	Build       Build  `yaml:"build"`
	// Port is the node API port inside each node container.
	Port int `yaml:"port"`
	// Env is extra environment for every node.
	Env map[string]string `yaml:"env"`
	// Promise is what the target claims: "exclusive", "overlap-bound: D"
	// or "fenced". The checkers read it to tell violations from risks.
	Promise string `yaml:"promise"`

	// Dir is the folder the manifest was read from.
	Dir string `yaml:"-"`
}

// Build says how the node image is made.
type Build struct {
	// Go is a main package, relative to the target's folder, compiled with
	// CGO_ENABLED=0 into a FROM scratch image.
	Go string `yaml:"go"`
}

// Load reads the manifest in dir.
func Load(dir string) (Manifest, error) {
	var m Manifest
	b, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return m, fmt.Errorf("no %s in %s", ManifestFile, dir)
		}
		return m, err
	}
	if err := yaml.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("%s: %v", filepath.Join(dir, ManifestFile), err)
	}
	if m.Port == 0 {
		m.Port = DefaultPort
	}
	if m.Dir, err = filepath.Abs(dir); err != nil {
		return m, err
	}
	return m, m.validate()
}

func (m Manifest) validate() error {
	where := filepath.Join(m.Dir, ManifestFile)
	switch {
	case m.Name == "":
		return fmt.Errorf("%s: name is missing", where)
	case m.Build.Go == "":
		return fmt.Errorf("%s: build.go (the main package to compile) is missing", where)
	case m.Port < 1 || m.Port > 65535:
		return fmt.Errorf("%s: port %d is out of range", where, m.Port)
	case m.Promise == "":
		return fmt.Errorf("%s: promise is missing (exclusive, overlap-bound: D, or fenced)", where)
	}
	return nil
}

// Find returns the target called name among the folders of root.
func Find(root, name string) (Manifest, error) {
	all, err := List(root)
	if err != nil {
		return Manifest{}, err
	}
	var names []string
	for _, m := range all {
		if m.Name == name {
			return m, nil
		}
		names = append(names, m.Name)
	}
	return Manifest{}, fmt.Errorf("unknown target %q (known: %s)", name, strings.Join(names, ", "))
}

// List reads every manifest one level below root, sorted by name.
func List(root string) ([]Manifest, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	var out []Manifest
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(root, e.Name())
		if _, err := os.Stat(filepath.Join(dir, ManifestFile)); err != nil {
			continue
		}
		m, err := Load(dir)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Package engines reads the file naming the Docker Engines a run spreads its containers over, and assigns each container to one.
package engines

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// File is an engines file: the engines, in the order round-robin
// placement goes over them, and where named containers must run.
type File struct {
	Engines []Engine `yaml:"engines"`
	// Placement puts a container (a node, a service member, or
	// "resource") on a named engine; the others are spread (Assign).
	Placement map[string]string `yaml:"placement,omitempty"`
	// MTU is the overlay network's: below every link's between the
	// engines by the overlay's own header (VXLAN, 50 bytes).
	MTU int `yaml:"mtu,omitempty"`
}

// Engine is one Docker Engine and how to reach it.
type Engine struct {
	Name string `yaml:"name"`
	// Host is the Engine's API endpoint, as DOCKER_HOST says it:
	// tcp://HOST:PORT or unix:///PATH.
	Host string `yaml:"host"`
	// TLS, when set, is the client's certificate and the CA that signed
	// the Engine's, for a tcp endpoint.
	TLS *TLS `yaml:"tls,omitempty"`
	// Advertise is the address the other engines reach this one at for
	// the swarm (ports 2377, 7946 and 4789); by default the host of Host.
	Advertise string `yaml:"advertise,omitempty"`
}

// TLS names PEM files, relative to the engines file's folder.
type TLS struct {
	CA   string `yaml:"ca"`
	Cert string `yaml:"cert"`
	Key  string `yaml:"key"`
}

// DefaultMTU leaves room for VXLAN's 50 bytes under a link of 1,350, the
// least measured between engines in containers (FACTS: an inner
// engine's own MTU).
const DefaultMTU = 1300

// Resource is the name the resource is placed by.
const Resource = "resource"

var validName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)

// Load reads and checks an engines file; its errors name the file.
func Load(path string) (File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return File{}, err
	}
	f, err := Parse(b, filepath.Dir(path))
	if err != nil {
		return File{}, fmt.Errorf("%s: %v", path, err)
	}
	return f, nil
}

// Parse reads an engines file's bytes; TLS files are found from dir.
func Parse(b []byte, dir string) (File, error) {
	var f File
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		msg = strings.TrimPrefix(msg, "unmarshal errors:\n")
		return File{}, errors.New(strings.Join(strings.Fields(msg), " "))
	}
	if f.MTU == 0 {
		f.MTU = DefaultMTU
	}
	for i := range f.Engines {
		if t := f.Engines[i].TLS; t != nil {
			for _, p := range []*string{&t.CA, &t.Cert, &t.Key} {
				if *p != "" && !filepath.IsAbs(*p) {
					*p = filepath.Join(dir, *p)
				}
			}
		}
	}
	return f, f.Validate()
}

// Validate says what is wrong with f, the first thing found.
func (f File) Validate() error {
	if len(f.Engines) == 0 {
		return errors.New("no engines")
	}
	if f.MTU < 576 || f.MTU > 9000 {
		return fmt.Errorf("mtu %d: want 576 to 9000", f.MTU)
	}
	seen := map[string]bool{}
	for i, e := range f.Engines {
		if !validName.MatchString(e.Name) {
			return fmt.Errorf("engine %d: name %q: want lower-case letters, digits and dashes", i+1, e.Name)
		}
		if seen[e.Name] {
			return fmt.Errorf("engine %s: named twice", e.Name)
		}
		seen[e.Name] = true
		if err := e.validate(); err != nil {
			return fmt.Errorf("engine %s: %v", e.Name, err)
		}
	}
	for _, c := range slices.Sorted(maps.Keys(f.Placement)) {
		if !seen[f.Placement[c]] {
			return fmt.Errorf("placement of %s: no engine %q", c, f.Placement[c])
		}
	}
	return nil
}

func (e Engine) validate() error {
	u, err := url.Parse(e.Host)
	if err != nil {
		return fmt.Errorf("host %q: %v", e.Host, err)
	}
	switch {
	case u.Scheme == "tcp" && u.Port() != "":
	case u.Scheme == "unix" && u.Path != "":
		if e.TLS != nil {
			return errors.New("tls on a unix socket")
		}
	default:
		return fmt.Errorf("host %q: want tcp://HOST:PORT or unix:///PATH", e.Host)
	}
	if e.TLS == nil {
		return nil
	}
	files := []struct{ what, path string }{{"ca", e.TLS.CA}, {"cert", e.TLS.Cert}, {"key", e.TLS.Key}}
	for _, p := range files {
		if p.path == "" {
			return fmt.Errorf("tls: no %s", p.what)
		}
	}
	for _, p := range files {
		if _, err := os.Stat(p.path); err != nil {
			return fmt.Errorf("tls %s: %v", p.what, err)
		}
	}
	return nil
}

// AdvertiseAddr is the address the other engines reach e at: Advertise,
// or the host of a tcp endpoint ("" for a unix socket with none given,
// which the Engine then chooses).
func (e Engine) AdvertiseAddr() string {
	if e.Advertise != "" {
		return e.Advertise
	}
	if u, err := url.Parse(e.Host); err == nil && u.Scheme == "tcp" {
		return u.Hostname()
	}
	return ""
}

// Engine is the engine of f named name, if there is one.
func (f File) Engine(name string) (Engine, bool) {
	i := slices.IndexFunc(f.Engines, func(e Engine) bool { return e.Name == name })
	if i < 0 {
		return Engine{}, false
	}
	return f.Engines[i], true
}

// Assign puts every container of groups on an engine: the placed ones
// where Placement says, each group's others round-robin over the
// engines in their order, from the first. Groups are spread on their
// own (the nodes, then each service's members), so that a small group
// is not left on one engine by the groups before it. The resource, when
// not placed, is on the first engine. A placement of a container that is
// in no group is an error: a misspelt name would otherwise place nothing.
func (f File) Assign(groups ...[]string) (map[string]string, error) {
	out := map[string]string{Resource: f.Engines[0].Name}
	for _, g := range groups {
		next := 0
		for _, c := range g {
			if e, ok := f.Placement[c]; ok {
				out[c] = e
				continue
			}
			out[c] = f.Engines[next%len(f.Engines)].Name
			next++
		}
	}
	for _, c := range slices.Sorted(maps.Keys(f.Placement)) {
		if _, ok := out[c]; !ok {
			return nil, fmt.Errorf("placement of %s: the run has no such container", c)
		}
		out[c] = f.Placement[c]
	}
	return out, nil
}

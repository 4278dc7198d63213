package harness

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/splitbrain/splitbrain/targets"
)

// commandKind is a command (build.command): a program its base holds,
// run as the image's entry point.
type commandKind struct{}

func (commandKind) build(ctx context.Context, d *Docker, tag, _ string, b targets.Build, base string) error {
	entry, err := json.Marshal(b.Command)
	if err != nil {
		return err
	}
	dockerfile := fmt.Sprintf("FROM %s\n%sENTRYPOINT %s\n", base, makeDirs(b.Dirs), entry)
	return d.buildContext(ctx, tag, nil, "Dockerfile", map[string][]byte{"Dockerfile": []byte(dockerfile)})
}

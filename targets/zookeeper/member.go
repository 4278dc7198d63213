package zookeeper

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// Prepare writes the configuration and myid of server self of an ensemble
// of servers, on every start: the same each time, as the ensemble is
// fixed for a run, while DataDir keeps what the server wrote.
func Prepare(self string, servers []string, s Settings) error {
	id, err := ID(self)
	if err != nil {
		return err
	}
	cfg, err := Config(servers, s)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(DataDir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(DataDir, "myid"), []byte(strconv.Itoa(id)+"\n"), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(ConfigFile, []byte(cfg), 0o644); err != nil {
		return fmt.Errorf("writing %s: %v", ConfigFile, err)
	}
	return nil
}

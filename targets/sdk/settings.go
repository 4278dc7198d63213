package sdk

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

// Settings reads a target's own environment (the env of its manifest) with
// defaults. The first malformed value is kept for Err, so a driver reads
// every setting and checks once, as bufio.Scanner does.
type Settings struct{ err error }

// String is the value of key, or def when it is unset or empty.
func (s *Settings) String(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// Int is the integer value of key, or def when it is unset.
func (s *Settings) Int(key string, def int) int {
	v := os.Getenv(key)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		s.fail(key, v, "an integer")
		return def
	}
	return n
}

// Duration is the value of key as a Go duration (50ms, 2s), or def when it
// is unset.
func (s *Settings) Duration(key string, def time.Duration) time.Duration {
	v := os.Getenv(key)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		s.fail(key, v, "a positive duration such as 50ms")
		return def
	}
	return d
}

// Err is the first malformed setting, or nil.
func (s *Settings) Err() error { return s.err }

func (s *Settings) fail(key, value, want string) {
	if s.err == nil {
		s.err = fmt.Errorf("%s=%q: want %s", key, value, want)
	}
}

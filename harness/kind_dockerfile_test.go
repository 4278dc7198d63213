package harness

import (
	"slices"
	"testing"
)

func TestBaseImages(t *testing.T) {
	df := []byte(`# comment FROM nothing
FROM --platform=linux/amd64 splitbrain/base:1 AS build
RUN make
from build
FROM scratch
FROM ${BASE}
FROM splitbrain/other
`)
	if got, want := baseImages(df), []string{"splitbrain/base:1", "splitbrain/other"}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

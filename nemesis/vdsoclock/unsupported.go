//go:build !(linux && amd64)

package vdsoclock

import (
	"errors"
	"runtime"

	"github.com/splitbrain/splitbrain/contract"
)

// Clocks needs x86-64 Linux: routine.asm is x86-64 code.
type Clocks struct{}

// New says why the clocks cannot be skewed here.
func New() (*Clocks, error) {
	return nil, errors.New("vDSO clock patching needs linux/amd64, not " + runtime.GOOS + "/" + runtime.GOARCH)
}

func (*Clocks) Set(contract.Skew) error { return errors.ErrUnsupported }
func (*Clocks) Rescan() error           { return errors.ErrUnsupported }
func (*Clocks) Heal() error             { return errors.ErrUnsupported }
func (*Clocks) Skew() contract.Skew     { return contract.Skew{} }
func (*Clocks) Patched() int            { return 0 }
func (*Clocks) Keeping() int            { return 0 }

//go:build !linux

package sdk

// kernelMonotonic is Linux's alone: elsewhere the watch reads Go's
// monotonic clock from the process's start.
func kernelMonotonic() (int64, bool) { return 0, false }

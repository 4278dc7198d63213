package sdk

import (
	"syscall"
	"unsafe"
)

// kernelMonotonic reads the kernel's CLOCK_MONOTONIC, which every
// container on the host shares. A system call of the standard library's
// own, so that a target outside this repository needs no module beyond it.
func kernelMonotonic() (int64, bool) {
	const clockMonotonic = 1 // CLOCK_MONOTONIC in <linux/time.h>
	var ts syscall.Timespec
	_, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockMonotonic, uintptr(unsafe.Pointer(&ts)), 0)
	return ts.Nano(), errno == 0
}

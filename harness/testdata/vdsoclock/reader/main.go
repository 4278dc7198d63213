// Command reader prints, every 20 ms, the kernel's realtime clock asked by a
// raw system call (true time: no patch of the vDSO reaches it), then what
// Go's time reads through the vDSO: time.Now() in unix nanoseconds and
// time.Since(start), then true time again: the clocks were read between the
// two.
package main

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	start := time.Now()
	for {
		truth := trueTime()
		rt, mono := time.Now().UnixNano(), int64(time.Since(start))
		fmt.Println(truth, rt, mono, trueTime())
		time.Sleep(20 * time.Millisecond)
	}
}

// trueTime is the kernel's realtime clock in unix nanoseconds.
func trueTime() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_REALTIME, &ts); err != nil {
		panic(err)
	}
	return ts.Nano()
}

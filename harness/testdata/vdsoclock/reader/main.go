// Command reader prints, every 20 ms, the kernel's realtime clock asked by a
// raw system call (true time: no patch of the vDSO reaches it), then what
// Go's time reads through the vDSO: time.Now() in unix nanoseconds and
// time.Since(start).
package main

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	start := time.Now()
	for {
		var truth unix.Timespec
		if err := unix.ClockGettime(unix.CLOCK_REALTIME, &truth); err != nil {
			panic(err)
		}
		fmt.Println(truth.Nano(), time.Now().UnixNano(), int64(time.Since(start)))
		time.Sleep(20 * time.Millisecond)
	}
}

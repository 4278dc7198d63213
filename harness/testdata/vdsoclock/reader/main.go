// Command reader prints, every 20 ms, what Go's time reads: time.Now() in
// unix nanoseconds and time.Since(start), both through the vDSO.
package main

import (
	"fmt"
	"time"
)

func main() {
	start := time.Now()
	for {
		fmt.Println(time.Now().UnixNano(), int64(time.Since(start)))
		time.Sleep(20 * time.Millisecond)
	}
}

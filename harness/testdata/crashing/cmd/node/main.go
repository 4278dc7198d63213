// Command node dies at once, as a broken target would.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Println("crashing: cannot open /data/state: the disk is on fire")
	os.Exit(3)
}

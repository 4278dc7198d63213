// Command store serves its port for a few seconds, then dies for good,
// as a server whose disk failed mid-run would.
package main

import (
	"fmt"
	"net"
	"os"
	"time"
)

func main() {
	ln, err := net.Listen("tcp", ":2379")
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	time.Sleep(3 * time.Second)
	fmt.Println("store: the disk is gone, giving up")
	os.Exit(3)
}

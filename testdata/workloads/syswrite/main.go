// Command syswrite is the workload of the kernel-frame tests: goroutines that loop
// on a one-byte write(2) to /dev/null, so nearly all of its CPU time is the write system call
// (kernel entry, vfs_write, write_null, the way back) under syscall.write.
//
// Usage: syswrite [-duration 10s] [-workers 2]   (-duration 0: until SIGTERM)
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"
)

var (
	stop   atomic.Bool
	writes atomic.Uint64
)

//go:noinline
func writeLoop(f *os.File) {
	b := []byte{'x'}
	for !stop.Load() {
		if _, err := f.Write(b); err != nil {
			fmt.Fprintln(os.Stderr, "syswrite:", err)
			os.Exit(1)
		}
		writes.Add(1)
	}
}

func main() {
	duration := flag.Duration("duration", 10*time.Second, "how long to run (0: until SIGTERM)")
	workers := flag.Int("workers", 2, "goroutines writing")
	flag.Parse()
	f, err := os.OpenFile("/dev/null", os.O_WRONLY, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, "syswrite:", err)
		os.Exit(1)
	}
	for i := 0; i < *workers; i++ {
		go writeLoop(f)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	if *duration > 0 {
		select {
		case <-sig:
		case <-time.After(*duration):
		}
	} else {
		<-sig
	}
	stop.Store(true)
	fmt.Printf("writes %d\n", writes.Load())
}

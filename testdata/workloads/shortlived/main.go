// Command shortlived is the workload of the short-lived-process tests: it burns -cpu of its own
// CPU time in one goroutine (main.spin), then exits, so a recorder that follows processes from
// their exec keeps a known number of samples of each run, and the test can compare them with
// the run's own CPU time (its rusage). main.tag, set at build time, makes two builds of it differ.
//
// Usage: shortlived [-cpu 20ms]
package main

import (
	"flag"
	"fmt"
	"os"
	"syscall"
	"time"
	"unsafe"
)

var tag = "a" // -ldflags=-X main.tag=b makes another build of the same program

// cpuTime is this process's CPU time so far (user and system, every thread).
func cpuTime() time.Duration {
	var ts syscall.Timespec
	const clockProcessCputimeID = 2
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockProcessCputimeID, uintptr(unsafe.Pointer(&ts)), 0)
	return time.Duration(ts.Nano())
}

//go:noinline
func spin(until time.Duration) uint64 {
	var x uint64
	for cpuTime() < until {
		for i := 0; i < 20000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	return x
}

func main() {
	cpu := flag.Duration("cpu", 20*time.Millisecond, "CPU time to burn before exiting")
	flag.Parse()
	x := spin(*cpu)
	if x == 42 {
		fmt.Fprintln(os.Stderr, tag)
	}
}

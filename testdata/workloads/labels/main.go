// Command labels is the workload of the goroutine-label tests: goroutines with
// different pprof label sets doing different, known amounts of CPU work, so that the label
// shares switchback records can be compared with runtime/pprof's of the same run (-cpuprofile).
//
//	endpoint=/api/users,tenant=a    3 spinning goroutines (pprof.Do)
//	endpoint=/api/orders            2 spinning goroutines (pprof.Do, nested: inherits nothing)
//	(no labels)                     1 spinning goroutine
//	phase=one / phase=two           1 goroutine that changes its labels every 100 ms
//	                                (pprof.SetGoroutineLabels), so each holds half of its
//	                                time in any window of a few seconds
//	k1..k8 = v1..v8                 1 goroutine with 8 labels
//	alloc=big                       1 goroutine allocating large objects: much of its CPU runs
//	                                on g0 under runtime.systemstack (mallocgc -> largeAlloc)
//	long=<200 bytes>                a sleeping goroutine whose value is longer than 128 bytes
//
// Usage: labels [-duration 10s] [-cpuprofile FILE] [-cpurate HZ]   (-duration 0: until SIGTERM)
//
//	labels -bench-labels N [-duration D]   (tools/bench/label_cost.sh: 2 spinning goroutines
//	                                        with N labels each)
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

var (
	stop atomic.Bool
	sink atomic.Uint64
	keep [][]byte
)

//go:noinline
func spin(n int) uint64 {
	x := uint64(n)
	for i := 0; i < n; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	return x
}

//go:noinline
func users() {
	for !stop.Load() {
		sink.Add(spin(20000))
	}
}

//go:noinline
func orders() {
	for !stop.Load() {
		sink.Add(spin(20000))
	}
}

//go:noinline
func unlabelled() {
	for !stop.Load() {
		sink.Add(spin(20000))
	}
}

//go:noinline
func phases() {
	one := pprof.WithLabels(context.Background(), pprof.Labels("phase", "one"))
	two := pprof.WithLabels(context.Background(), pprof.Labels("phase", "two"))
	for i := 0; !stop.Load(); i++ {
		if i%2 == 0 {
			pprof.SetGoroutineLabels(one)
		} else {
			pprof.SetGoroutineLabels(two)
		}
		// 100 ms of this goroutine's own CPU time, whatever the load.
		for end := threadCPU() + 100*time.Millisecond; threadCPU() < end && !stop.Load(); {
			sink.Add(spin(20000))
		}
	}
}

// threadCPU is the calling thread's CPU time; the goroutine is locked to its thread.
func threadCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

//go:noinline
func eight() {
	for !stop.Load() {
		sink.Add(spin(20000))
	}
}

//go:noinline
func allocator() {
	for !stop.Load() {
		b := make([]byte, 1<<20) // large: allocated on g0 under systemstack
		b[0] = 1
		keep = append(keep[:0], b)
		sink.Add(spin(2000))
	}
}

func main() {
	duration := flag.Duration("duration", 10*time.Second, "how long to run; 0: until SIGTERM")
	cpuprofile := flag.String("cpuprofile", "", "write a runtime/pprof CPU profile of the run")
	cpurate := flag.Int("cpurate", 0, "runtime/pprof sampling rate in Hz (default Go's 100)")
	benchLabels := flag.Int("bench-labels", -1, "benchmark: only 2 spinning goroutines, each with N labels (0: none)")
	flag.Parse()
	if *benchLabels >= 0 {
		var kv []string
		for i := 0; i < *benchLabels; i++ {
			kv = append(kv, fmt.Sprintf("key%d", i), fmt.Sprintf("value-%d", i))
		}
		ctx := pprof.WithLabels(context.Background(), pprof.Labels(kv...))
		for i := 0; i < 2; i++ {
			go func() {
				if *benchLabels > 0 {
					pprof.SetGoroutineLabels(ctx)
				}
				unlabelled()
			}()
		}
		fmt.Println("ready")
		time.Sleep(*duration)
		return
	}
	if *cpuprofile != "" {
		if *cpurate > 0 {
			runtime.SetCPUProfileRate(*cpurate) // StartCPUProfile then warns and keeps this rate
		}
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer f.Close()
		defer pprof.StopCPUProfile()
	}
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		go pprof.Do(ctx, pprof.Labels("endpoint", "/api/users", "tenant", "a"), func(context.Context) { users() })
	}
	for i := 0; i < 2; i++ {
		go pprof.Do(ctx, pprof.Labels("endpoint", "/api/orders"), func(context.Context) { orders() })
	}
	go unlabelled()
	go func() {
		runtime.LockOSThread()
		phases()
	}()
	go pprof.Do(ctx, pprof.Labels("k1", "v1", "k2", "v2", "k3", "v3", "k4", "v4", "k5", "v5", "k6", "v6", "k7", "v7",
		"k8", "v8"), func(context.Context) { eight() })
	go pprof.Do(ctx, pprof.Labels("alloc", "big"), func(context.Context) { allocator() })
	go pprof.Do(ctx, pprof.Labels("long", strings.Repeat("x", 200)), func(context.Context) {
		for !stop.Load() {
			time.Sleep(10 * time.Millisecond)
		}
	})
	fmt.Println("ready")
	if *duration > 0 {
		time.Sleep(*duration)
	} else {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
		<-sig
	}
	stop.Store(true)
	time.Sleep(50 * time.Millisecond)
}

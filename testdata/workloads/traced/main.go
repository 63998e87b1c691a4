// Command traced is the workload of `switchback trace` (exit probes). Every function named in
// counters below is meant to be traced; each keeps its own count of calls and of calls that did
// not return normally (a panic passed through it, or runtime.Goexit ended it), so a test can
// check the tracer's figures exactly: calls = exits + aborted.
//
// What it exercises, all at once on many goroutines:
//   - deep recursion inside a traced function (main.deep), each level with a 1 KiB frame, on
//     fresh goroutines, so the stack is copied to a larger one many times while traced calls
//     are pending; some chains panic at the bottom and are recovered at the top (main.deepTop);
//   - panics that pass through traced functions (main.leafPanic, main.middle) and are recovered
//     in a traced function with a defer (main.recoverer);
//   - defer (main.withDefer: its `return` exists twice in the machine code);
//   - runtime.Goexit inside a traced function (main.exitVia);
//   - a known latency (main.sleeper sleeps -sleep each call).
//
// Usage: traced [-goroutines N] [-iterations N] [-counters FILE]   (the mixed run)
//
//	traced -paths N [-fast D] [-slow D]                       (trace --stacks: N calls of
//	                                                           main.shared from each of
//	                                                           two callers, see below)
//	traced -bench N                                           (N calls of main.tiny,
//	                                                           prints CPU ns per call)
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

type counter struct {
	Calls   atomic.Int64 `json:"-"`
	Aborted atomic.Int64 `json:"-"`
}

var (
	cLeafPanic = &counter{}
	cMiddle    = &counter{}
	cRecoverer = &counter{}
	cWithDefer = &counter{}
	cDeep      = &counter{}
	cDeepTop   = &counter{}
	cExitVia   = &counter{}
	cSleeper   = &counter{}
)

var counters = map[string]*counter{
	"main.leafPanic": cLeafPanic,
	"main.middle":    cMiddle,
	"main.recoverer": cRecoverer,
	"main.withDefer": cWithDefer,
	"main.deep":      cDeep,
	"main.deepTop":   cDeepTop,
	"main.exitVia":   cExitVia,
	"main.sleeper":   cSleeper,
}

var sink atomic.Int64

// threadCPUNanos is the CPU time (user + system) of the calling thread.
func threadCPUNanos() int64 {
	var ru syscall.Rusage
	const rusageThread = 1 // RUSAGE_THREAD (Linux)
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		panic(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// leafPanic panics on every third i.
//
//go:noinline
func leafPanic(i int) int {
	cLeafPanic.Calls.Add(1)
	if i%3 == 0 {
		cLeafPanic.Aborted.Add(1)
		panic(fmt.Sprintf("leaf %d", i))
	}
	return i * 2
}

// middle has no defer: a panic below it ends it without a return.
//
//go:noinline
func middle(i int) int {
	cMiddle.Calls.Add(1)
	if i%3 == 0 {
		cMiddle.Aborted.Add(1) // leafPanic is about to panic through us
	}
	return leafPanic(i) + 1
}

// recoverer stops the panic: it returns normally through its deferreturn path.
//
//go:noinline
func recoverer(i int) (r int) {
	cRecoverer.Calls.Add(1)
	defer func() {
		if recover() != nil {
			r = -1
		}
	}()
	return middle(i)
}

// withDefer returns through the open-coded defer path only.
//
//go:noinline
func withDefer(i int) int {
	cWithDefer.Calls.Add(1)
	defer sink.Add(1)
	if i%2 == 0 {
		return i + 1
	}
	return i - 1
}

// deep recurses n levels with a 1 KiB frame each: the goroutine's stack is copied to a
// larger one several times while every level is a pending traced call.
//
//go:noinline
func deep(n int, panicAtBottom bool) int {
	cDeep.Calls.Add(1)
	var pad [1024]byte
	pad[n%len(pad)] = byte(n)
	if n == 0 {
		if panicAtBottom {
			panic("bottom")
		}
		return int(pad[0])
	}
	return deep(n-1, panicAtBottom) + int(pad[n%len(pad)])
}

// deepTop runs one chain of deep and recovers a panic from its bottom.
//
//go:noinline
func deepTop(n int, panicAtBottom bool) (r int) {
	cDeepTop.Calls.Add(1)
	defer func() {
		if recover() != nil {
			r = -1
		}
	}()
	if panicAtBottom {
		cDeep.Aborted.Add(int64(n + 1)) // every level of the chain ends in the panic
	}
	return deep(n, panicAtBottom)
}

// exitVia ends its goroutine with runtime.Goexit: the call never returns.
//
//go:noinline
func exitVia() {
	cExitVia.Calls.Add(1)
	cExitVia.Aborted.Add(1)
	runtime.Goexit()
}

// alwaysPanics has no RET at all (the compiler knows panic does not return): the tracer must
// list it as not traceable rather than drop it silently. Never called.
//
//go:noinline
func alwaysPanics(i int) int {
	panic(fmt.Sprintf("always %d", i))
}

//go:noinline
func sleeper(d time.Duration) {
	cSleeper.Calls.Add(1)
	time.Sleep(d)
}

//go:noinline
func tinyLeaf(x int) int { return x ^ 0x5a }

// tiny is the benchmark's traced function: small, but with a frame and so a stack check.
//
//go:noinline
func tiny(x int) int { return tinyLeaf(x) + 1 }

// shared is called from two paths with known, different delays (trace --stacks): through
// main.fastCaller it sleeps -fast, through main.slowPath -> main.slowCaller -slow, the latter on
// a goroutine labelled path=slow.
//
//go:noinline
func shared(d time.Duration) {
	time.Sleep(d)
}

//go:noinline
func fastCaller(d time.Duration) { shared(d) }

//go:noinline
func slowCaller(d time.Duration) { shared(d) }

//go:noinline
func slowPath(d time.Duration) { slowCaller(d) }

func twoPaths(n int, fast, slow time.Duration) {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := 0; i < n; i++ {
			fastCaller(fast)
		}
	}()
	go pprof.Do(context.Background(), pprof.Labels("path", "slow"), func(context.Context) {
		defer wg.Done()
		for i := 0; i < n; i++ {
			slowPath(slow)
		}
	})
	wg.Wait()
}

func worker(id, iterations int, deepLevels int) {
	if iterations < 0 {
		alwaysPanics(id)
	}
	for i := 0; i < iterations; i++ {
		sink.Add(int64(recoverer(id*iterations + i)))
		sink.Add(int64(withDefer(i)))
		if i%10 == 0 {
			// A fresh goroutine starts with a small stack, so deep grows it many times.
			done := make(chan struct{})
			go func(i int) {
				defer close(done)
				sink.Add(int64(deepTop(deepLevels, i%20 == 0)))
			}(i)
			<-done
		}
		if i%25 == 0 {
			done := make(chan struct{})
			go func() {
				defer close(done)
				exitVia()
			}()
			<-done
		}
	}
}

func main() {
	goroutines := flag.Int("goroutines", 32, "worker goroutines")
	iterations := flag.Int("iterations", 200, "iterations per worker")
	deepLevels := flag.Int("deep", 200, "recursion depth of main.deep")
	sleeps := flag.Int("sleeps", 5, "calls of main.sleeper")
	sleepFor := flag.Duration("sleep", 20*time.Millisecond, "how long main.sleeper sleeps")
	countersFile := flag.String("counters", "", "write the per-function counters here as JSON")
	bench := flag.Int("bench", 0, "call main.tiny N times, print the ns per call, and exit")
	paths := flag.Int("paths", 0, "call main.shared N times from each of two paths, then exit")
	fast := flag.Duration("fast", time.Millisecond, "main.shared's sleep through main.fastCaller")
	slow := flag.Duration("slow", 4*time.Millisecond, "main.shared's sleep through main.slowCaller")
	start := flag.Duration("start-delay", 0, "sleep this long first (time for a tracer to attach)")
	flag.Parse()
	time.Sleep(*start)

	if *paths > 0 {
		twoPaths(*paths, *fast, *slow)
		return
	}

	if *bench > 0 {
		// CPU time of this thread, not wall time: on a busy machine the wall clock also counts
		// the time other tasks held the CPU, which the probes did not cost.
		runtime.LockOSThread()
		start := threadCPUNanos()
		acc := 0
		for i := 0; i < *bench; i++ {
			acc += tiny(i)
		}
		elapsed := threadCPUNanos() - start
		sink.Add(int64(acc))
		fmt.Printf("%.1f\n", float64(elapsed)/float64(*bench))
		return
	}

	var wg sync.WaitGroup
	for g := 0; g < *goroutines; g++ {
		wg.Add(1)
		go func(id int) {
			defer wg.Done()
			worker(id, *iterations, *deepLevels)
		}(g)
	}
	for i := 0; i < *sleeps; i++ {
		sleeper(*sleepFor)
	}
	wg.Wait()

	out := map[string]map[string]int64{}
	for name, c := range counters {
		out[name] = map[string]int64{"calls": c.Calls.Load(), "aborted": c.Aborted.Load()}
	}
	data, _ := json.MarshalIndent(out, "", "  ")
	if *countersFile != "" {
		if err := os.WriteFile(*countersFile, append(data, '\n'), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	} else {
		fmt.Println(string(data))
	}
}

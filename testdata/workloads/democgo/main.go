// Command democgo is the cgo test workload: one goroutine calls a C function that spins in C
// frames compiled with frame pointers (asmcgocall crossing), another spins in Go. Flags match
// the demo workload: -duration (0 = until SIGINT/SIGTERM), -cpuprofile, -counters, -v; and
// -rounds, the C work per call (0: calls that return at once, so that samples land in
// asmcgocall's switch to g0 and back as often as in a program that calls small C functions);
// -callbacks, C code that calls back into Go instead of spinning (callback.go).
package main

/*
#cgo CFLAGS: -O0 -fno-omit-frame-pointer

#include <stdint.h>

// -O0: every C function, the leaf c_spin_inner included, pushes RBP (gcc omits leaf frame
// pointers at -O1 and above, and cgo rejects -mno-omit-leaf-frame-pointer).
__attribute__((noinline)) uint64_t c_spin_inner(uint64_t x) {
	for (int i = 0; i < 1000; i++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		x ^= x >> 33;
		__asm__ volatile("" : "+r"(x));
	}
	return x;
}

__attribute__((noinline)) uint64_t c_spin_middle(uint64_t x, int rounds) {
	for (int i = 0; i < rounds; i++) x = c_spin_inner(x);
	return x;
}

// c_tiny returns at once: the cgo loop with -rounds=0 calls it, the shortest call into C.
__attribute__((noinline)) uint64_t c_tiny(uint64_t x) { return x * 3 + 1; }

// c_spin runs about rounds * 1000 iterations entirely in C before returning to Go.
__attribute__((noinline)) uint64_t c_spin(uint64_t seed, int rounds) {
	return c_spin_middle(seed, rounds) + 1;
}

// -callbacks: C calling Go (goCallback, exported in callback.go) n times on the goroutine that
// called C: Go -> asmcgocall -> c_callback_loop -> c_call_go -> crosscall2 -> cgocallback -> Go.
extern void goCallback(uint64_t);

__attribute__((noinline)) void c_call_go(uint64_t x) { goCallback(x); }

__attribute__((noinline)) void c_callback_loop(uint64_t x, int n) {
	for (int i = 0; i < n; i++) c_call_go(x + (uint64_t)i);
}
*/
import "C"

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

var stopFlag atomic.Bool
var cgoCalls, goIters atomic.Uint64

// cgoCaller calls into C repeatedly; each call spins for rounds * 1000 iterations in C (200: a
// few hundred microseconds; 0: c_tiny, which returns at once).
//
//go:noinline
func cgoCaller(wg *sync.WaitGroup, rounds int) {
	defer wg.Done()
	var acc C.uint64_t
	for !stopFlag.Load() {
		if rounds == 0 {
			acc = C.c_tiny(acc)
		} else {
			acc = C.c_spin(acc, C.int(rounds))
		}
		cgoCalls.Add(1)
	}
	sink += uint64(acc)
}

var sink uint64

// callIntoCAgain calls C from inside a callback (callback.go), and C calls back once more.
//
//go:noinline
func callIntoCAgain(x uint64) {
	C.c_call_go(C.uint64_t(x))
}

// callbackCaller (-callbacks) calls into C, which calls back into Go (callback.go) 100 times
// per call.
//
//go:noinline
func callbackCaller(wg *sync.WaitGroup) {
	defer wg.Done()
	for !stopFlag.Load() {
		C.c_callback_loop(C.uint64_t(cgoCalls.Load()), 100)
		cgoCalls.Add(1)
	}
}

//go:noinline
func goSpinInner(x uint64) uint64 {
	for i := 0; i < 1000; i++ {
		x = x*6364136223846793005 + 1442695040888963407
		x ^= x >> 33
	}
	return x
}

//go:noinline
func goSpin(wg *sync.WaitGroup) {
	defer wg.Done()
	var acc uint64
	for !stopFlag.Load() {
		acc = goSpinInner(acc)
		goIters.Add(1)
	}
	sink += acc
}

func main() {
	duration := flag.Duration("duration", 10*time.Second, "how long to run; 0 runs until SIGINT/SIGTERM")
	cpuprofile := flag.String("cpuprofile", "", "write a runtime/pprof CPU profile of the whole run to this file")
	countersFile := flag.String("counters", "", "write operation counts (JSON) to this file at exit")
	verbose := flag.Bool("v", false, "print the counters on stdout at exit")
	rounds := flag.Int("rounds", 200, "C work per cgo call, in thousands of iterations (0: return at once)")
	callbacks := flag.Bool("callbacks", false, "the cgo goroutine calls C that calls back into Go (allocating, yielding)")
	flag.Parse()

	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fmt.Fprintf(os.Stderr, "democgo: %v\n", err)
			os.Exit(1)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintf(os.Stderr, "democgo: %v\n", err)
			os.Exit(1)
		}
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)

	start := time.Now()
	var wg sync.WaitGroup
	if *callbacks {
		// Alone: a goroutine spinning in Go would take the P each callback waits for on entry.
		wg.Add(1)
		go callbackCaller(&wg)
	} else {
		wg.Add(2)
		go cgoCaller(&wg, *rounds)
		go goSpin(&wg)
	}

	var timeout <-chan time.Time
	if *duration > 0 {
		timeout = time.After(*duration)
	}
	select {
	case <-timeout:
	case <-sigs:
	}
	stopFlag.Store(true)
	elapsed := time.Since(start).Seconds()
	counts := map[string]uint64{"cgo": cgoCalls.Load(), "spin": goIters.Load(), "callbacks": callbackCalls.Load()}
	wg.Wait()
	if *cpuprofile != "" {
		pprof.StopCPUProfile()
	}
	out := map[string]any{"elapsed_s": elapsed, "counts": counts}
	if *countersFile != "" {
		data, _ := json.MarshalIndent(out, "", "  ")
		if err := os.WriteFile(*countersFile, append(data, '\n'), 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "democgo: %v\n", err)
			os.Exit(1)
		}
	}
	if *verbose {
		fmt.Printf("cgo %d\nspin %d\ncallbacks %d\n", counts["cgo"], counts["spin"], counts["callbacks"])
	}
}

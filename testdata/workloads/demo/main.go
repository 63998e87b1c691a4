// Command demo is the switchback test workload: a Go program whose goroutines exercise every
// stack switch the profiler must cross (systemstack, mcall, morestack/newstack, vDSO, frameless
// leaf functions) plus CPU-bound baselines for overhead measurements.
//
// It writes its own runtime/pprof CPU profile (-cpuprofile), which the integration tests use as
// the oracle, and per-mode operation counts (-counters) for throughput benchmarks. It prints
// nothing on stdout unless -v is given.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// stopFlag is set once the run ends; every mode loop polls it.
var stopFlag atomic.Bool

func stopped() bool { return stopFlag.Load() }

// counters holds one operation counter per mode.
var counters = map[string]*atomic.Uint64{}

func counter(mode string) *atomic.Uint64 { return counters[mode] }

type modeFunc func(workers int, wg *sync.WaitGroup)

var modes = map[string]modeFunc{
	"alloc":   runAlloc,
	"chan":    runChan,
	"gosched": runGosched,
	"recurse": runRecurse,
	"vdso":    runVdso,
	"leaf":    runLeaf,
	"depth":   runDepth,
	"spin":    runSpin,
}

// allModes is what -mode=all expands to: every mode except depth (a benchmark-only mode).
var allModes = []string{"alloc", "chan", "gosched", "recurse", "vdso", "leaf", "spin"}

var depthFlag = flag.Int("depth", 64, "mode depth: number of frames of main.depthRecurse above the spinning bottom")

func main() {
	modeFlag := flag.String("mode", "all", "comma-separated modes: alloc, chan, gosched, recurse, vdso, leaf, depth, spin, or all")
	duration := flag.Duration("duration", 10*time.Second, "how long to run; 0 runs until SIGINT/SIGTERM")
	cpuprofile := flag.String("cpuprofile", "", "write a runtime/pprof CPU profile of the whole run to this file")
	countersFile := flag.String("counters", "", "write per-mode operation counts (JSON) to this file at exit")
	workers := flag.Int("workers", 1, "goroutines (or goroutine pairs, for chan) per mode")
	verbose := flag.Bool("v", false, "print the counters on stdout at exit")
	execAfter := flag.Bool("exec", false, "when the run ends, replace this process with the command after the flags (its path absolute), as a service re-executing itself does: for profilers that must follow exec")
	flag.Parse()
	if *execAfter && (flag.NArg() == 0 || !strings.HasPrefix(flag.Arg(0), "/")) {
		fmt.Fprintln(os.Stderr, "demo: -exec needs a command with an absolute path after the flags")
		os.Exit(2)
	}

	var selected []string
	for _, m := range strings.Split(*modeFlag, ",") {
		m = strings.TrimSpace(m)
		switch {
		case m == "":
		case m == "all":
			selected = append(selected, allModes...)
		case modes[m] != nil:
			selected = append(selected, m)
		default:
			fmt.Fprintf(os.Stderr, "demo: unknown mode %q\n", m)
			os.Exit(2)
		}
	}
	if len(selected) == 0 {
		fmt.Fprintln(os.Stderr, "demo: no mode selected")
		os.Exit(2)
	}
	if *workers < 1 {
		*workers = 1
	}
	for m := range modes {
		counters[m] = new(atomic.Uint64)
	}

	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fmt.Fprintf(os.Stderr, "demo: %v\n", err)
			os.Exit(1)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintf(os.Stderr, "demo: %v\n", err)
			os.Exit(1)
		}
		defer f.Close()
	}

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)

	start := time.Now()
	var wg sync.WaitGroup
	seen := map[string]bool{}
	for _, m := range selected {
		if seen[m] {
			continue
		}
		seen[m] = true
		modes[m](*workers, &wg)
	}

	var timeout <-chan time.Time
	if *duration > 0 {
		timer := time.NewTimer(*duration)
		defer timer.Stop()
		timeout = timer.C
	}
	select {
	case <-timeout:
	case <-sigs:
	}
	stopFlag.Store(true)
	elapsed := time.Since(start)
	// Snapshot the counters now so the rate matches the elapsed time; then give the workers a
	// moment to leave their loops (goroutines blocked elsewhere are simply abandoned).
	snapshot := map[string]uint64{}
	for _, m := range selected {
		snapshot[m] = counter(m).Load()
	}
	waitTimeout(&wg, 2*time.Second)

	if *cpuprofile != "" {
		pprof.StopCPUProfile()
	}
	out := struct {
		ElapsedS float64            `json:"elapsed_s"`
		Workers  int                `json:"workers"`
		Depth    int                `json:"depth"`
		Counts   map[string]uint64  `json:"counts"`
		Rates    map[string]float64 `json:"rates"`
	}{ElapsedS: elapsed.Seconds(), Workers: *workers, Depth: *depthFlag, Counts: snapshot, Rates: map[string]float64{}}
	for m, n := range snapshot {
		out.Rates[m] = float64(n) / elapsed.Seconds()
	}
	if *countersFile != "" {
		data, _ := json.MarshalIndent(out, "", "  ")
		if err := os.WriteFile(*countersFile, append(data, '\n'), 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "demo: %v\n", err)
			os.Exit(1)
		}
	}
	if *verbose {
		names := make([]string, 0, len(snapshot))
		for m := range snapshot {
			names = append(names, m)
		}
		sort.Strings(names)
		for _, m := range names {
			fmt.Printf("%s %d %.0f/s\n", m, snapshot[m], out.Rates[m])
		}
	}
	if *execAfter {
		err := syscall.Exec(flag.Arg(0), flag.Args(), os.Environ())
		fmt.Fprintf(os.Stderr, "demo: exec %s: %v\n", flag.Arg(0), err)
		os.Exit(1)
	}
}

func waitTimeout(wg *sync.WaitGroup, d time.Duration) {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(d):
	}
}

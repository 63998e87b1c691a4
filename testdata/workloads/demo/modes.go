package main

import (
	"runtime"
	"sync"
	"time"
)

// ---- alloc: mallocgc -> largeAlloc -> systemstack(mheap.alloc), and small allocations ----

const (
	largeSize = 64 << 10 // > 32 KiB: a large object, allocated on the system stack
	smallSize = 48
	keepLarge = 64 // live large objects per worker (4 MiB), so GC has work
	keepSmall = 4096
)

// sink keeps the last allocations alive so the heap grows and GC cycles run.
var sinkMu sync.Mutex
var sinkLarge [][]byte
var sinkSmall [][]byte

//go:noinline
func allocLarge(i int) []byte {
	b := make([]byte, largeSize)
	b[i%largeSize] = byte(i)
	return b
}

//go:noinline
func allocSmall(i int) []byte {
	b := make([]byte, smallSize)
	b[i%smallSize] = byte(i)
	return b
}

func allocWorker(wg *sync.WaitGroup) {
	defer wg.Done()
	large := make([][]byte, keepLarge)
	small := make([][]byte, keepSmall)
	c := counter("alloc")
	for i := 0; !stopped(); i++ {
		large[i%keepLarge] = allocLarge(i)
		for j := 0; j < 16; j++ {
			small[(i*16+j)%keepSmall] = allocSmall(i + j)
		}
		c.Add(17)
	}
	sinkMu.Lock()
	sinkLarge = append(sinkLarge, large[0])
	sinkSmall = append(sinkSmall, small[0])
	sinkMu.Unlock()
}

func runAlloc(workers int, wg *sync.WaitGroup) {
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go allocWorker(wg)
	}
}

// ---- chan: unbuffered ping-pong; each receive parks via mcall(park_m) ----

//go:noinline
func chanPing(ping chan<- int, pong <-chan int, wg *sync.WaitGroup) {
	defer wg.Done()
	c := counter("chan")
	for i := 0; !stopped(); i++ {
		ping <- i
		<-pong
		c.Add(1)
	}
	close(ping)
}

//go:noinline
func chanPong(ping <-chan int, pong chan<- int) {
	for v := range ping {
		pong <- v
	}
}

func runChan(workers int, wg *sync.WaitGroup) {
	for i := 0; i < workers; i++ {
		ping, pong := make(chan int), make(chan int)
		wg.Add(1)
		go chanPong(ping, pong)
		go chanPing(ping, pong, wg)
	}
}

// ---- gosched: mcall(gosched_m) ----

//go:noinline
func goschedLoop(wg *sync.WaitGroup) {
	defer wg.Done()
	c := counter("gosched")
	for !stopped() {
		runtime.Gosched()
		c.Add(1)
	}
}

func runGosched(workers int, wg *sync.WaitGroup) {
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go goschedLoop(wg)
	}
}

// ---- recurse: fresh goroutines growing their stack: morestack -> newstack -> copystack ----

// recurseDepth frames of recursePad words each: about 960 KiB, so a fresh goroutine (8 KiB
// stack) doubles its stack 7 times, while the whole stack stays well under the 64 frames
// runtime/pprof keeps and the 128 frames switchback keeps (deep stacks are mode depth's job).
const (
	recurseDepth = 48
	recursePad   = 2560
)

//go:noinline
func recurse(n int) int {
	var pad [recursePad]int // a 20 KiB frame: the large-frame stack check, and fast growth
	pad[n%recursePad] = n
	if n == 0 {
		return pad[0]
	}
	return recurse(n-1) + pad[(n+1)%recursePad]
}

//go:noinline
func recurseWorker(wg *sync.WaitGroup) {
	defer wg.Done()
	c := counter("recurse")
	for !stopped() {
		done := make(chan int)
		go func() { done <- recurse(recurseDepth) }()
		<-done
		c.Add(1)
	}
}

func runRecurse(workers int, wg *sync.WaitGroup) {
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go recurseWorker(wg)
	}
}

// ---- vdso: time.Now -> runtime.walltime/nanotime1 -> [vdso] ----

var vdsoSink int64

//go:noinline
func vdsoLoop(wg *sync.WaitGroup) {
	defer wg.Done()
	c := counter("vdso")
	var acc int64
	for !stopped() {
		for j := 0; j < 64; j++ {
			acc += time.Now().UnixNano()
		}
		c.Add(64)
	}
	vdsoSink = acc
}

func runVdso(workers int, wg *sync.WaitGroup) {
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go vdsoLoop(wg)
	}
}

// ---- leaf: a frameless leaf function (no BP push) called in a hot loop ----

// leafAdd has no stack frame ($0-...): frame-pointer unwinding loses its caller unless the
// unwinder uses the pcsp table. Keep it frameless (check with go build -gcflags=-S).
//
//go:noinline
func leafAdd(a, b uint64) uint64 {
	x := a ^ (b << 7)
	x ^= x >> 9
	x *= 0x9e3779b97f4a7c15
	x ^= x >> 29
	return x + b
}

var leafSink uint64

//go:noinline
func leafCaller(wg *sync.WaitGroup) {
	defer wg.Done()
	c := counter("leaf")
	var acc uint64
	for !stopped() {
		for j := uint64(0); j < 4096; j++ {
			acc = leafAdd(acc, j)
		}
		c.Add(4096)
	}
	leafSink = acc
}

func runLeaf(workers int, wg *sync.WaitGroup) {
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go leafCaller(wg)
	}
}

// ---- spin: the CPU-bound baseline for slowdown measurements ----

var spinSink uint64

// spinInner does a fixed chunk of arithmetic; one call is one counted iteration.
//
//go:noinline
func spinInner(seed uint64) uint64 {
	x := seed
	for i := 0; i < 1000; i++ {
		x = x*6364136223846793005 + 1442695040888963407
		x ^= x >> 33
	}
	return x
}

//go:noinline
func spin(wg *sync.WaitGroup) {
	defer wg.Done()
	c := counter("spin")
	var acc uint64
	for !stopped() {
		acc = spinInner(acc)
		c.Add(1)
	}
	spinSink += acc
}

func runSpin(workers int, wg *sync.WaitGroup) {
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go spin(wg)
	}
}

// ---- depth: N frames of depthRecurse, then spin at the bottom (unwind cost per depth) ----

//go:noinline
func depthRecurse(n int, wg *sync.WaitGroup) uint64 {
	if n <= 1 {
		return depthBottom()
	}
	return depthRecurse(n-1, wg) + 1
}

// depthBottom spins until the run ends; each spinInner call counts one iteration.
//
//go:noinline
func depthBottom() uint64 {
	c := counter("depth")
	var acc uint64
	for !stopped() {
		acc = spinInner(acc)
		c.Add(1)
	}
	return acc
}

func runDepth(workers int, wg *sync.WaitGroup) {
	n := *depthFlag
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			spinSink += depthRecurse(n, wg)
		}()
	}
}

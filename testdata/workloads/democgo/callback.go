package main

/*
#include <stdint.h>
*/
import "C"

import (
	"runtime"
	"sync/atomic"
)

var callbackCalls atomic.Uint64

// kept holds the callbacks' recent allocations, so that they are not optimized away.
var kept [16][]byte

// goCallback is called from C (c_call_go in main.go), on the goroutine that called C.
//
//export goCallback
func goCallback(x C.uint64_t) {
	callbackWork(uint64(x))
}

// nested is 1 while a callback runs one callback of its own (the callbacks run on one goroutine).
var nested int

// callbackWork is what a callback does: spin (long enough that the C glue of each callback,
// libc's mutex calls in frames without frame pointers, stays well under 0.1% of the samples),
// allocate 64 KiB (the heap's large-object path, which runs on the system stack), every eighth
// call yield (mcall; the goroutine may then be parked inside the callback while its M waits in
// the scheduler), and every sixteenth call C once more, which calls back into Go: a nested
// callback (Go -> C -> Go -> C -> Go). Each of these leaves the goroutine's saved state
// different from the one asmcgocall made before calling C.
//
//go:noinline
func callbackWork(x uint64) {
	for i := 0; i < 48; i++ {
		x = goSpinInner(x)
	}
	b := make([]byte, 64<<10)
	b[x%uint64(len(b))] = byte(x)
	kept[x%uint64(len(kept))] = b
	n := callbackCalls.Add(1)
	if n%8 == 0 {
		runtime.Gosched()
	}
	if n%16 == 1 && nested == 0 {
		nested = 1
		callIntoCAgain(x)
		nested = 0
	}
}

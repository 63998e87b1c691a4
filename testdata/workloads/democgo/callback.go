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

// callbackWork is what a callback does: spin (long enough that the C glue of each callback,
// libc's mutex calls in frames without frame pointers, stays well under 0.1% of the samples),
// allocate 64 KiB (the heap's large-object path, which runs on the system stack) and, every
// eighth call, yield (mcall; the goroutine may then
// be parked inside the callback while its M waits in the scheduler). Each of these leaves the
// goroutine's saved state different from the one asmcgocall made before calling C.
//
//go:noinline
func callbackWork(x uint64) {
	for i := 0; i < 48; i++ {
		x = goSpinInner(x)
	}
	b := make([]byte, 64<<10)
	b[x%uint64(len(b))] = byte(x)
	kept[x%uint64(len(kept))] = b
	if callbackCalls.Add(1)%8 == 0 {
		runtime.Gosched()
	}
}

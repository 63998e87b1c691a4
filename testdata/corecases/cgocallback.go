//go:build corecases_cgo

package main

/*
#include <stdint.h>
*/
import "C"

// goCallback is called from C (cc_call_go in cgo.go): C -> crosscall2 -> cgocallback ->
// cgocallbackg -> goCallback -> cbWork, on the goroutine that called C (whose g0 then holds the
// C frames) or on a C-created thread (an extra M: its goroutine stack ends at goexit).
//
//export goCallback
func goCallback(x C.uint64_t) {
	sink.Add(cbWork(uint64(x)))
}

//go:noinline
func cbWork(x uint64) uint64 {
	for i := 0; i < 200_000; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	return x
}

// goNestOuter and goNestInner: the cgocallback-nested state. The inner callback allocates 1 MiB
// objects, so it keeps switching to g0 (mallocgc -> mheap.alloc -> systemstack), and each switch
// overwrites the goroutine's gobuf, which then no longer holds asmcgocall's save for either
// callback (the runtime keeps those in cgocallback's frame on the goroutine stack). A thread
// stopped in the allocation is on g0 under two callbacks, each with its own C frames on g0.
//
//export goNestOuter
func goNestOuter(x C.uint64_t) { nestInner(uint64(x) + 1) }

//export goNestInner
func goNestInner(x C.uint64_t) { nestAlloc(uint64(x)) }

var nestSink []byte

//go:noinline
func nestAlloc(x uint64) {
	b := make([]byte, 1<<20)
	b[x%uint64(len(b))] = byte(x)
	nestSink = b
}

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

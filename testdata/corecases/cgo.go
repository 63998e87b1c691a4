//go:build corecases_cgo

package main

/*
#cgo CFLAGS: -O0 -fno-omit-frame-pointer
#include <stdint.h>

// -O0 so that the leaf pushes a frame pointer too (gcc drops leaf frame pointers at -O1+).
__attribute__((noinline)) uint64_t cc_leaf(uint64_t x) {
	for (int i = 0; i < 1000; i++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		x ^= x >> 33;
		__asm__ volatile("" : "+r"(x));
	}
	return x;
}

__attribute__((noinline)) uint64_t cc_middle(uint64_t x, int rounds) {
	for (int i = 0; i < rounds; i++) x = cc_leaf(x);
	return x;
}

__attribute__((noinline)) uint64_t cc_spin(uint64_t seed, int rounds) {
	return cc_middle(seed, rounds) + 1;
}
*/
import "C"

// cgo: Go -> cgocall -> asmcgocall (switch to g0) -> _cgo_..._Cfunc_cc_spin -> cc_spin ->
// cc_middle -> cc_leaf, every C function with a frame pointer.

//go:noinline
func cgoCaller() {
	var acc C.uint64_t
	for {
		acc = C.cc_spin(acc, 200)
		sink.Add(uint64(acc))
	}
}

func init() {
	states["cgo"] = func() {
		say("ready")
		cgoCaller()
	}
}

//go:build corecases_cgo

package main

/*
#cgo CFLAGS: -O0 -fno-omit-frame-pointer
#cgo LDFLAGS: -lpthread
#include <pthread.h>
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
// cgocallback: C calling Go (goCallback, exported in cgocallback.go), from a goroutine's own
// thread (Go -> cc_callback_loop -> cc_call_go -> Go) and from a thread C created.
extern void goCallback(uint64_t);

__attribute__((noinline)) void cc_call_go(uint64_t x) { goCallback(x); }

__attribute__((noinline)) void cc_callback_loop(uint64_t x) {
	for (;;) cc_call_go(x++);
}

static void* cc_callback_thread(void* arg) {
	cc_callback_loop((uint64_t)(uintptr_t)arg);
	return 0;
}

static void cc_start_callback_thread(void) {
	pthread_t t;
	pthread_create(&t, 0, cc_callback_thread, (void*)(uintptr_t)1000000);
}

// cgocallback-nested: Go -> cc_nest_outer -> goNestOuter (Go, exported in cgocallback.go) ->
// cc_nest_inner -> goNestInner (Go), two callbacks deep on one goroutine.
extern void goNestOuter(uint64_t);
extern void goNestInner(uint64_t);

__attribute__((noinline)) void cc_nest_inner(uint64_t x) { goNestInner(x); }

__attribute__((noinline)) void cc_nest_outer(uint64_t x) { goNestOuter(x); }
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
	states["cgocallback"] = func() {
		C.cc_start_callback_thread()
		say("ready")
		C.cc_callback_loop(0)
	}
	states["cgocallback-nested"] = func() {
		say("ready")
		for x := C.uint64_t(0); ; x++ {
			C.cc_nest_outer(x)
		}
	}
}

// nestInner is the outer callback's C call (goNestOuter cannot name C functions: a file with
// //export may only declare C in its preamble).
func nestInner(x uint64) { C.cc_nest_inner(C.uint64_t(x)) }

// Command corecases drives the Go runtime into one unwind state per -state flag and keeps it
// there (hot loop or endless repeat) so that a debugger breakpoint or a signal-triggered core
// catches a thread in that state. It prints "pid N" and then "ready" on stdout once the state
// is being exercised. The coredump capture scripts in tools/coredump/ use it; see their README.
//
// States: leaf systemstack mcall-curg dropg gosched morestack vdso signal idle stale stale-parked crash, and
// cgo, cgocallback and cgocallback-nested when built with -tags corecases_cgo (CGO_ENABLED=1).
//
// -sigdfl resets SIGABRT to SIG_DFL with a raw rt_sigaction, so that an external SIGABRT makes
// the kernel (or qemu-user) write a core without running Go's crash handler, which would stop
// the world and print tracebacks first. Go does not reinstall the handler afterwards.
package main

import (
	"flag"
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

var sink atomic.Uint64

// states maps a -state value to its driver; drivers never return.
var states = map[string]func(){
	"leaf":        stateLeaf,
	"systemstack": stateSystemstack,
	"mcall-curg":  stateChannels,
	"dropg":       stateChannels,
	"gosched":     stateGosched,
	"morestack":   stateMorestack,
	"vdso":        stateVDSO,
	"signal":      stateSignal,
	"idle":        stateIdle,
	"stale":       stateStale,
	"stale-parked": stateStaleParked,
	"crash":       stateCrash,
}

func say(s string) { os.Stdout.WriteString(s + "\n") }

func main() {
	state := flag.String("state", "", "unwind state to drive (see package comment)")
	procs := flag.Int("procs", 0, "GOMAXPROCS (0: keep the default)")
	sigdfl := flag.Bool("sigdfl", false, "reset SIGABRT to SIG_DFL (core without Go's crash handler)")
	flag.Parse()
	run, ok := states[*state]
	if !ok {
		os.Stderr.WriteString("corecases: unknown -state " + strconv.Quote(*state) + "\n")
		os.Exit(2)
	}
	if *procs > 0 {
		runtime.GOMAXPROCS(*procs)
	}
	if *sigdfl {
		resetSIGABRT()
	}
	say("pid " + strconv.Itoa(os.Getpid()))
	run()
}

// sigactiont is the kernel's struct sigaction on linux/amd64 and linux/arm64.
type sigactiont struct {
	handler  uintptr
	flags    uint64
	restorer uintptr
	mask     uint64
}

func resetSIGABRT() {
	var act sigactiont // handler 0 = SIG_DFL
	_, _, e := syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(syscall.SIGABRT),
		uintptr(unsafe.Pointer(&act)), 0, 8, 0, 0)
	if e != 0 {
		os.Stderr.WriteString("corecases: rt_sigaction: " + e.Error() + "\n")
		os.Exit(1)
	}
}

// ---- leaf: a frameless leaf (TEXT main.leaf(SB), NOSPLIT|ABIInternal, $0-16) in a hot loop.

//go:noinline
func leaf(x, y uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	return x + y
}

//go:noinline
func leafCaller() {
	var acc uint64
	for i := uint64(0); ; i++ {
		acc = leaf(acc, i)
		if i&(1<<24-1) == 0 {
			sink.Store(acc)
		}
	}
}

func stateLeaf() {
	say("ready")
	leafCaller()
}

// ---- systemstack: large allocations: mallocgc -> mcache.allocLarge -> mheap.alloc ->
// systemstack -> mheap.alloc.func1 (on g0) -> allocSpan.

var bigSink [4][]byte

//go:noinline
func largeAllocator(slot int) {
	for i := 0; ; i++ {
		b := make([]byte, (1+i%8)<<20) // 1-8 MiB: always a large (direct heap) span
		b[0] = byte(i)
		bigSink[slot] = b
	}
}

func stateSystemstack() {
	for i := 1; i < len(bigSink); i++ {
		go largeAllocator(i)
	}
	say("ready")
	largeAllocator(0)
}

// ---- mcall-curg / dropg: goroutines ping-pong on unbuffered channels, so they park through
// gopark -> mcall(park_m) all the time (park_m entry: m.curg still set; after dropg: m.curg == 0,
// the goroutine is only in the g0 slot and in its own gobuf).

//go:noinline
func pingPong(in <-chan uint64, out chan<- uint64) {
	for v := range in {
		out <- v + 1
	}
}

func stateChannels() {
	const pairs = 4
	for i := 0; i < pairs; i++ {
		a, b := make(chan uint64), make(chan uint64)
		go pingPong(a, b)
		go pingPong(b, a)
		a <- 0 // start the ball
	}
	say("ready")
	for {
		time.Sleep(time.Second)
	}
}

// ---- gosched: runtime.Gosched loop: mcall(gosched_m) -> goschedImpl -> dropg -> schedule.

//go:noinline
func yielder() {
	for i := uint64(0); ; i++ {
		runtime.Gosched()
		sink.Add(1)
	}
}

func stateGosched() {
	go yielder()
	say("ready")
	yielder()
}

// ---- morestack: fresh goroutines (8 KiB stacks) recurse deep, each growth goes through
// morestack -> newstack (on g0) -> copystack.

//go:noinline
func recurse(n int) uint64 {
	var pad [32]uint64 // 256-byte frames: ~2000 levels reach 512 KiB, 7 stack growths
	pad[n%32] = uint64(n)
	if n == 0 {
		return pad[0]
	}
	return recurse(n-1) + pad[(n+1)%32]
}

func grower(done chan<- uint64) { done <- recurse(2000) }

func stateMorestack() {
	done := make(chan uint64)
	for i := 0; i < 2; i++ {
		go grower(done)
	}
	say("ready")
	for {
		sink.Add(<-done)
		go grower(done)
	}
}

// ---- vdso: time.Now loop: time.now -> walltime/nanotime1 -> __vdso_clock_gettime.

//go:noinline
func clockReader() {
	for {
		t := time.Now()
		sink.Add(uint64(t.UnixNano()))
	}
}

func stateVDSO() {
	say("ready")
	clockReader()
}

// ---- signal: CPU profiling at 1 kHz (per-thread timers/setitimer -> SIGPROF -> sigtramp ->
// sigtrampgo -> sighandler -> sigprof on gsignal) while spinning. Nobody reads the profile, so
// samples are dropped once the buffer is full, but every signal is still handled. Signals sent
// from outside (SIGURG) also land in sighandler.

//go:noinline
func spin() {
	var acc uint64
	for i := uint64(0); ; i++ {
		acc = acc*6364136223846793005 + i
		if i&(1<<20-1) == 0 {
			sink.Store(acc)
		}
	}
}

func stateSignal() {
	runtime.SetCPUProfileRate(1000)
	go spin()
	say("ready")
	spin()
}

// ---- idle: start a burst of blocking syscalls so the runtime creates several Ms, then let
// them all go idle (mstart/schedule -> findrunnable -> stopm -> mPark -> futex).

//go:noinline
func blockInSyscall(done chan<- bool) {
	ts := syscall.Timespec{Nsec: 50 * 1000 * 1000}
	syscall.Nanosleep(&ts, nil) // holds its M in a syscall; sysmon hands the P to a new M
	done <- true
}

func stateIdle() {
	done := make(chan bool)
	const n = 6
	for i := 0; i < n; i++ {
		go blockInSyscall(done)
	}
	for i := 0; i < n; i++ {
		<-done
	}
	time.Sleep(100 * time.Millisecond)
	say("ready")
	for {
		time.Sleep(time.Second)
	}
}

// ---- stale: a victim goroutine parks (mcall(park_m) on some M, whose g0 slot then names it)
// and is woken by a waker on another P, so it usually runs on another M while the first M
// sleeps in stopm with the slot still naming the victim. The victim spins for a while each
// time it runs so a capture finds it running.

//go:noinline
func victimSpin() uint64 {
	var acc uint64
	for i := uint64(0); i < 20_000_000; i++ {
		acc = acc*6364136223846793005 + i
	}
	return acc
}

//go:noinline
func victim(wake <-chan bool, done chan<- bool) {
	for range wake {
		sink.Add(victimSpin())
		done <- true
	}
}

//go:noinline
func waker(wake chan<- bool, done <-chan bool) {
	for {
		time.Sleep(2 * time.Millisecond) // park the waker too: its M goes idle
		wake <- true
		<-done
	}
}

func stateStale() {
	for i := 0; i < 2; i++ {
		wake, done := make(chan bool), make(chan bool)
		go victim(wake, done)
		go waker(wake, done)
	}
	say("ready")
	for {
		time.Sleep(time.Second)
	}
}

// ---- stale-parked (run with -procs 2 and GODEBUG=asyncpreemptoff=1): goroutines in short
// blocking syscalls, more of them runnable than there are Ps. A worker whose syscall lost its
// P finds none free in exitsyscall: mcall(exitsyscall0) queues it and its M parks in stopm,
// the worker still in that M's g0 slot. Another M runs the worker, sysmon preempts it at a
// stack check (asynchronous preemption is off, so its gobuf is morestack's save) and it waits
// on a run queue: parked (g.m == 0), its SP in its stack, yet not the caller of the parked M's
// scheduler frames (the saved-pc rule refuses it: docs/design/0004-saved-state-proofs.md).

//go:noinline
func parkedSpinStep(acc uint64) uint64 { return acc*6364136223846793005 + 1442695040888963407 }

//go:noinline
func parkedSpin() uint64 {
	var acc uint64
	for i := 0; i < 3_000_000; i++ {
		acc = parkedSpinStep(acc) // a call, so a stack check, per iteration
	}
	return acc
}

//go:noinline
func syscallWorker() {
	ts := syscall.Timespec{Nsec: 200_000}
	for {
		syscall.Syscall(syscall.SYS_NANOSLEEP, uintptr(unsafe.Pointer(&ts)), 0, 0) // blocks: sysmon retakes the P
		sink.Add(parkedSpin())
	}
}

func stateStaleParked() {
	for i := 0; i < 6; i++ {
		go syscallWorker()
	}
	say("ready")
	for {
		time.Sleep(time.Second)
	}
}

// ---- crash: goroutines spinning on every P while the capture sends SIGABRT with
// GOTRACEBACK=crash: Go relays SIGQUIT to every M, so each thread sits in the signal handler
// (sigtramp -> sigtrampgo -> sighandler on gsignal) on top of whatever it was running.

func stateCrash() {
	for i := 1; i < runtime.GOMAXPROCS(0); i++ {
		go spin()
	}
	say("ready")
	spin()
}

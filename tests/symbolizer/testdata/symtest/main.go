// symtest: a small Go program whose stack at one point runs through two levels of inlined
// calls. It prints runtime.Callers' raw pcs and the runtime.CallersFrames expansion so the
// symbolizer tests can compare their own expansion with the runtime's.
package main

import (
	"fmt"
	"os"
	"reflect"
	"runtime"
)

var sink int

//go:noinline
func capture() []uintptr {
	pcs := make([]uintptr, 64)
	n := runtime.Callers(1, pcs)
	return pcs[:n]
}

// outer and middle are small enough to be inlined into main.work; capture is not.
func middle(x int) []uintptr {
	sink += x
	return capture()
}

func outer(x int) []uintptr {
	sink += x * 2
	return middle(x + 1)
}

//go:noinline
func work(x int) []uintptr {
	sink++
	return outer(x)
}

type walker struct{ depth int }

//go:noinline
func (w *walker) recurse(n int) int {
	if n == 0 {
		return w.depth
	}
	w.depth++
	return w.recurse(n-1) + 1
}

func main() {
	pcs := work(len(os.Args))
	// The load address of main.work lets a test undo the PIE load bias.
	fmt.Printf("work %#x\n", reflect.ValueOf(work).Pointer())
	for _, pc := range pcs {
		fmt.Printf("pc %#x\n", pc)
	}
	frames := runtime.CallersFrames(pcs)
	for {
		f, more := frames.Next()
		fmt.Printf("frame %s|%s|%d\n", f.Function, f.File, f.Line)
		if !more {
			break
		}
	}
	w := &walker{}
	sink += w.recurse(3)
}

// coretest: the program whose cores the coredump tests read. It starts goroutines that
// block on a channel and goroutines that spin and sleep (so threads sit in futex waits,
// in nanosleep and in Go code), prints "ready" once they run, and waits to be cored or killed.
package main

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"
)

var sink int

//go:noinline
func spin(n int, started *sync.WaitGroup) {
	started.Done()
	for {
		for i := 0; i < n; i++ {
			sink += i
		}
		time.Sleep(time.Millisecond)
	}
}

//go:noinline
func block(ch chan int, started *sync.WaitGroup) {
	started.Done()
	<-ch
}

func main() {
	runtime.GOMAXPROCS(4)
	ch := make(chan int)
	var started sync.WaitGroup
	for i := 0; i < 4; i++ {
		started.Add(1)
		go block(ch, &started)
	}
	for i := 0; i < 3; i++ {
		started.Add(1)
		go spin(100000+i, &started)
	}
	started.Wait()
	time.Sleep(100 * time.Millisecond) // let the runtime settle its threads
	fmt.Println("ready", os.Getpid())
	select {}
}

package parallel

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

func TestDoRunsAtOnceAndKeepsOrder(t *testing.T) {
	var running, most atomic.Int32
	release := make(chan struct{})
	items := []int{0, 1, 2, 3}
	go func() {
		for running.Load() < int32(len(items)) {
			time.Sleep(time.Millisecond)
		}
		close(release)
	}()
	errs := Do(items, func(i int) error {
		n := running.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		<-release // every call must be under way before any ends
		if i%2 == 1 {
			return fmt.Errorf("item %d", i)
		}
		return nil
	})
	if most.Load() != int32(len(items)) {
		t.Fatalf("%d calls at once, want %d", most.Load(), len(items))
	}
	for i, err := range errs {
		if want := i%2 == 1; (err != nil) != want {
			t.Fatalf("errs[%d] = %v", i, err)
		}
	}
}

func TestEachJoinsInOrder(t *testing.T) {
	if err := Each([]string{"a", "b"}, func(string) error { return nil }); err != nil {
		t.Fatalf("Each = %v, want nil", err)
	}
	errA, errC := errors.New("a"), errors.New("c")
	err := Each([]error{errA, nil, errC}, func(e error) error { return e })
	if !errors.Is(err, errA) || !errors.Is(err, errC) || err.Error() != "a\nc" {
		t.Fatalf("Each = %q, want a then c", err)
	}
	if err := Each[int](nil, func(int) error { return errA }); err != nil {
		t.Fatalf("Each of nothing = %v", err)
	}
}

func TestFirstIsTheFirstInTheItemsOrder(t *testing.T) {
	err := First([]int{0, 1, 2, 3}, func(i int) error {
		if i == 0 {
			time.Sleep(10 * time.Millisecond) // ends last, comes first
		}
		if i != 1 {
			return fmt.Errorf("item %d", i)
		}
		return nil
	})
	if err == nil || err.Error() != "item 0" {
		t.Fatalf("got %v, want item 0's error alone", err)
	}
	if err := First([]int{1, 2}, func(int) error { return nil }); err != nil {
		t.Fatal(err)
	}
}

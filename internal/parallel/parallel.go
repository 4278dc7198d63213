// Package parallel runs one function over many items at once and collects what each call returned.
package parallel

import (
	"errors"
	"sync"
)

// Do calls f on every item at once, waits for every call, and returns each
// call's error at its item's index.
func Do[T any](items []T, f func(T) error) []error {
	errs := make([]error, len(items))
	var wg sync.WaitGroup
	for i, item := range items {
		wg.Go(func() { errs[i] = f(item) })
	}
	wg.Wait()
	return errs
}

// Each is Do with the errors joined, in the order of the items: nil when
// every call succeeded.
func Each[T any](items []T, f func(T) error) error {
	return errors.Join(Do(items, f)...)
}

// First is Do with the first error in the order of the items, alone: nil
// when every call succeeded. For a message of one line naming the first
// item that failed.
func First[T any](items []T, f func(T) error) error {
	for _, err := range Do(items, f) {
		if err != nil {
			return err
		}
	}
	return nil
}

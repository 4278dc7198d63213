// Package layers holds the test that keeps splitbrain's folders in their floors: no package imports one that stands above it.
package layers

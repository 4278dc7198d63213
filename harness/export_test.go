package harness

// GoGCFlags lets the external tests compile as the images do.
const GoGCFlags = goGCFlags

// Fit lets the external tests fit a slope as the clock tests do.
func Fit[T any](items []T, xy func(T) (x, y float64)) float64 { return fit(items, xy) }

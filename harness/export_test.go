package harness

// GoGCFlags lets the external tests compile as the images do.
const GoGCFlags = goGCFlags

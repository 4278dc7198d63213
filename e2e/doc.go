// Package e2e holds the real-system tests: real servers and libraries in containers, driven under faults through the harness and judged, and the kept findings re-judged from their run folders.
package e2e

// Package architecture holds no code: its test guards the map of the
// tree. It checks, with `go list`, that selmix's layers point down as
// ARCHITECTURE.md draws them (each rule with a witness that could break
// it), and that every path ARCHITECTURE.md names exists.
package architecture

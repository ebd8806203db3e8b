// Package architecture holds no code: its test guards the map of the
// tree. It checks, with `go list`, that selmix's layers point down as
// ARCHITECTURE.md draws them (each rule with a witness that could break
// it), that every path ARCHITECTURE.md names exists, and that no Go file
// decodes TOML outside core/experiment, the one reader of a run's
// config.toml, but the readers of other files it lists.
package architecture

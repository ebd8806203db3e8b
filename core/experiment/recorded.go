package experiment

import (
	"fmt"

	"selmix/core/loop"

	"github.com/BurntSushi/toml"
)

// The reader of a run's recorded configuration (its config.toml, every key
// written out). It is the only one: the run store, the exports, the
// figures and the workbench ask it, or the run store's accessors built on
// it, for a recorded key, and decode no config.toml themselves
// (internal/architecture checks it).

// ParseRecorded parses the configuration a run was recorded with, to run
// it again (resume, replay, fork): a fine-tuning hyperparameter it does
// not name did not exist when it ran, so it takes the engine's default
// (loop.DefaultHyper, what ran then), not the built-in experiment's. A
// run recorded before finetune.cov_margin thus replays with the paper's
// aim, as it ran; one recorded before data.builtin with the first
// embedded split (200 test images per class); one recorded before
// record.plugin without the plug-in measurement. An old key name reads
// as the key it became (finetune.checkpoint_every: record.checkpoint_every).
// A key this selmix does not know, or a value it refuses, is an error.
func ParseRecorded(text, name string) (Config, error) {
	c, unknown, err := recorded(text)
	if err != nil {
		return c, fmt.Errorf("%s: %v", name, err)
	}
	if len(unknown) > 0 {
		return c, fmt.Errorf("%s: %s", name, unknownKey(unknown[0]))
	}
	return c, c.Validate()
}

// ReadRecorded reads the configuration a run was recorded with as
// ParseRecorded does, to show or compare it rather than run it: it does
// not validate the values, and passes over keys this selmix does not know
// (a newer one recorded them). Only text that is not TOML, or a value of
// the wrong type, is an error: name is then "not a valid configuration".
func ReadRecorded(text, name string) (Config, error) {
	c, _, err := recorded(text)
	if err != nil {
		return c, fmt.Errorf("%s: not a valid configuration: %v", name, err)
	}
	return c, nil
}

// recorded overlays a recorded configuration on the defaults, each key it
// does not name as it was before the key existed; it returns the keys it
// has no place for.
func recorded(text string) (Config, []string, error) {
	c := Default()
	md, unknown, err := decode(&c, text)
	if err != nil {
		return c, nil, err
	}
	if !md.IsDefined("data", "builtin") {
		c.Data.Builtin = 1 // recorded before the key: the first embedded split
	}
	if !md.IsDefined("record", "plugin") {
		c.Record.Plugin = false // recorded before the key: no plug-in was measured
	}
	d := loop.DefaultHyper()
	for _, key := range loop.HyperKeys() {
		if md.IsDefined("finetune", key) {
			continue
		}
		v, _ := d.Get(key)
		if err := c.Finetune.Hyper.Set(key, v); err != nil {
			return c, nil, fmt.Errorf("finetune.%v", err) // DefaultHyper is valid
		}
	}
	return c, unknown, nil
}

// Table is c as a TOML table, as its config.toml holds it: "section" →
// "key" → value (and "key" → value at the top), each value as TOML reads
// it (int64, float64, bool, string, or []any of them). What shows or
// compares configurations takes it.
func (c Config) Table() map[string]any {
	var m map[string]any
	if _, err := toml.Decode(c.Render(), &m); err != nil {
		panic(fmt.Sprintf("experiment: a rendered configuration does not read back: %v", err)) // Render writes TOML
	}
	return m
}

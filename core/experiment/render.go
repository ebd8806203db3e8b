package experiment

import (
	"fmt"
	"reflect"
	"strings"

	"selmix/core/loop"

	"github.com/BurntSushi/toml"
)

// Render writes c as a TOML configuration with every key's doc as a
// comment: what `selmix config` prints for Default(), and what a run
// stores as its config.toml. It parses back to c.
func (c Config) Render() string {
	var b strings.Builder
	b.WriteString("# selmix experiment configuration. Every key is shown with its value and what it does.\n")
	b.WriteString("# Override with a file (--config FILE, only the keys you change) or with\n")
	b.WriteString("# --set section.key=value on the command line.\n\n")
	v, t := reflect.ValueOf(c), reflect.TypeOf(c)
	var sections []int
	for i := range t.NumField() {
		if t.Field(i).Type.Kind() == reflect.Struct {
			sections = append(sections, i)
			continue
		}
		line(&b, t.Field(i).Tag.Get("toml"), v.Field(i).Interface(), t.Field(i).Tag.Get("doc"))
	}
	for _, i := range sections {
		fmt.Fprintf(&b, "\n[%s]\n", t.Field(i).Tag.Get("toml"))
		fields(&b, v.Field(i))
	}
	return b.String()
}

// fields writes a section's keys in order; an embedded struct's (the
// fine-tuning hyperparameters) come in its place, with their docs.
func fields(b *strings.Builder, v reflect.Value) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			fields(b, v.Field(i))
			continue
		}
		key, doc := f.Tag.Get("toml"), f.Tag.Get("doc")
		if t == reflect.TypeOf(loop.Hyper{}) {
			doc = loop.HyperDoc(key)
		}
		line(b, key, v.Field(i).Interface(), doc)
	}
}

// line writes `key = value  # doc`, the value as TOML writes it.
func line(b *strings.Builder, key string, value any, doc string) {
	var enc strings.Builder
	if err := toml.NewEncoder(&enc).Encode(map[string]any{"v": value}); err != nil {
		panic(fmt.Sprintf("experiment: rendering %s: %v", key, err)) // every field type encodes
	}
	val := strings.TrimSpace(strings.TrimPrefix(enc.String(), "v = "))
	kv := key + " = " + val
	if doc == "" {
		b.WriteString(kv + "\n")
		return
	}
	fmt.Fprintf(b, "%-22s # %s\n", kv, doc)
}

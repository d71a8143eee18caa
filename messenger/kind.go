package messenger

import "github.com/metnos/gateway/config"

// Kind is a messenger as the wiring registers it (one line each in
// cmd/gateway): its config section, decoded and checked by its own
// package, and what builds its adapter from the loaded config.
type Kind struct {
	// Section is its [name] table; the name is the channel's.
	Section config.SectionSpec
	// Build makes its factory from cfg, nil when cfg does not enable it;
	// o carries what the gateway gives every adapter.
	Build func(cfg config.Config, o Options) Factory
}

// Sections are the kinds' config sections, for config.LoadOptions.
func Sections(kinds []Kind) []config.SectionSpec {
	out := make([]config.SectionSpec, len(kinds))
	for i, k := range kinds {
		out[i] = k.Section
	}
	return out
}

// Register is a messenger's Kind: its [name] table, its value made by
// defaults with the catalogs' default language (C is its package's
// *Config, embedding a Chat), example as `gateway config example` shows
// it, and build, called only when cfg has the section and enables it.
// of is a config's section, nil when it is not registered.
func Register[C chatSection](name, example string, defaults func() C,
	build func(cfg config.Config, c C, o Options) Factory) (k Kind, of func(config.Config) C) {
	of = func(cfg config.Config) C {
		c, _ := cfg.Section(name).(C)
		return c
	}
	return Kind{Section: config.SectionSpec{Name: name, Example: example, New: func() config.Section {
		c := defaults()
		c.ChatDefaults()
		return c
	}}, Build: func(cfg config.Config, o Options) Factory {
		c, ok := cfg.Section(name).(C)
		if !ok || !c.Enabled() {
			return nil
		}
		return build(cfg, c, o)
	}}, of
}

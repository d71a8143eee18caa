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

// KindOf is the Kind of a messenger whose section's value is a C (its
// package's *Config): build is called only when cfg has the section and
// it is enabled.
func KindOf[C config.Messenger](section config.SectionSpec, build func(cfg config.Config, c C, o Options) Factory) Kind {
	return Kind{Section: section, Build: func(cfg config.Config, o Options) Factory {
		c, ok := cfg.Section(section.Name).(C)
		if !ok || !c.Enabled() {
			return nil
		}
		return build(cfg, c, o)
	}}
}

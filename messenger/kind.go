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

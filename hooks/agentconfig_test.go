package hooks

import "testing"

// The agent list exists once (Adapters): every adapter has its printed
// configuration, and no configuration names anything else.
func TestAgentConfig_OnePerAdapter(t *testing.T) {
	for _, ad := range Adapters() {
		if c, ok := ConfigFor(ad.Name, "/home/u"); !ok || c.Where == "" || c.Text == "" {
			t.Errorf("adapter %s has no configuration to print: %+v", ad.Name, c)
		}
	}
	for name := range agentConfigs {
		if _, ok := AdapterNamed(name); !ok {
			t.Errorf("a configuration for %q, which is no adapter", name)
		}
	}
}

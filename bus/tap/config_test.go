package tap

import (
	"testing"
	"time"

	"github.com/kubebus/kubebus/bus"
)

func TestFlagsConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		flags    Flags
		terminal bool
		check    func(t *testing.T, c Config)
		wantErr  bool
	}{
		{name: "defaults", flags: Flags{Follow: true}, check: func(t *testing.T, c Config) {
			if !c.Follow || c.Printer.Format != Table || c.Printer.Color || !c.Since.IsZero() || c.Filter.Selector != nil || c.Filter.Types != nil {
				t.Fatalf("unexpected config %+v", c)
			}
		}},
		{name: "everything", flags: Flags{URL: "nats://h:1", Resource: "deployments.apps", Namespace: "prod", Name: "web",
			Selector: "app=web", Types: "modified,deleted", Since: "42", Output: "json"},
			check: func(t *testing.T, c Config) {
				f := c.Filter
				if c.URL != "nats://h:1" || f.Group != "apps" || f.Resource != "deployments" || f.Namespace != "prod" || f.Name != "web" ||
					!f.Types[bus.Modified] || !f.Types[bus.Deleted] || f.Types[bus.Added] || f.Selector.String() != "app=web" ||
					c.Since.Revision != 42 || f.MinRevision != 42 || c.Printer.Format != JSON {
					t.Fatalf("unexpected config %+v", c)
				}
			}},
		{name: "duration since sets no minimum revision", flags: Flags{Since: "10m"}, check: func(t *testing.T, c Config) {
			if c.Since.Age != 10*time.Minute || c.Filter.MinRevision != 0 {
				t.Fatalf("unexpected config %+v", c)
			}
		}},
		{name: "colour on a terminal", flags: Flags{}, terminal: true, check: func(t *testing.T, c Config) {
			if !c.Printer.Color {
				t.Fatal("want colour")
			}
		}},
		{name: "no-color", flags: Flags{NoColor: true}, terminal: true, check: func(t *testing.T, c Config) {
			if c.Printer.Color {
				t.Fatal("want no colour")
			}
		}},
		{name: "no colour in json", flags: Flags{Output: "json"}, terminal: true, check: func(t *testing.T, c Config) {
			if c.Printer.Color {
				t.Fatal("want no colour")
			}
		}},
		{name: "-A with -n", flags: Flags{AllNamespaces: true, Namespace: "x"}, wantErr: true},
		{name: "bad resource", flags: Flags{Resource: "a/b/c"}, wantErr: true},
		{name: "bad selector", flags: Flags{Selector: "app in (web"}, wantErr: true},
		{name: "bad type", flags: Flags{Types: "CREATED"}, wantErr: true},
		{name: "bad since", flags: Flags{Since: "soon"}, wantErr: true},
		{name: "bad output", flags: Flags{Output: "wide"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := tt.flags.Config(tt.terminal)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error = %v, want error %v", err, tt.wantErr)
			}
			if tt.check != nil {
				tt.check(t, c)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	c := Config{}
	if err := c.validate(); err != nil || c.URL != DefaultURL || c.Logger == nil {
		t.Fatalf("validate() = %v, config %+v", err, c)
	}
	c = Config{Since: Since{Revision: 3, Age: time.Minute}}
	if err := c.validate(); err == nil {
		t.Fatal("want an error for a revision and an age")
	}
}

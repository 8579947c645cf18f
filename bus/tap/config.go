package tap

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
)

// DefaultURL is the NATS server the tap reads from unless told otherwise.
const DefaultURL = "nats://127.0.0.1:4222"

// Flags are the tap's command-line values as typed; Config turns them into a
// Config. The cobra command binds its flags to these fields.
type Flags struct {
	URL           string
	Resource      string // pods, deployments.apps, apps/deployments, deploy
	Namespace     string
	AllNamespaces bool // -A given explicitly; it conflicts with a namespace
	Selector      string
	Name          string
	Types         string // comma list
	Since         string // revision or duration
	Follow        bool
	Output        string
	NoColor       bool
}

// Config turns the flags into a Config. terminal says whether stdout is a
// terminal (colour is used only there, and never with NoColor).
func (f Flags) Config(terminal bool) (Config, error) {
	cfg := Config{URL: f.URL, Follow: f.Follow}
	if f.AllNamespaces && f.Namespace != "" {
		return Config{}, errors.New("tap: -A and --namespace both given; pick one")
	}
	var err error
	if cfg.Filter.Group, cfg.Filter.Resource, err = ParseResource(f.Resource); err != nil {
		return Config{}, err
	}
	cfg.Filter.Namespace, cfg.Filter.Name = strings.TrimSpace(f.Namespace), strings.TrimSpace(f.Name)
	if cfg.Filter.Types, err = ParseTypes(f.Types); err != nil {
		return Config{}, err
	}
	if strings.TrimSpace(f.Selector) != "" {
		if cfg.Filter.Selector, err = labels.Parse(f.Selector); err != nil {
			return Config{}, fmt.Errorf("tap: label selector %q: %w", f.Selector, err)
		}
	}
	if cfg.Since, err = ParseSince(f.Since); err != nil {
		return Config{}, err
	}
	cfg.Filter.MinRevision = cfg.Since.Revision
	if cfg.Printer.Format, err = ParseFormat(f.Output); err != nil {
		return Config{}, err
	}
	cfg.Printer.Color = terminal && !f.NoColor && cfg.Printer.Format == Table
	return cfg, nil
}

// Config configures Run.
type Config struct {
	// URL is the NATS server (default DefaultURL).
	URL    string
	Filter Filter
	Since  Since
	// Follow keeps reading new events until ctx ends; without it Run prints
	// the events stored when it started and returns.
	Follow  bool
	Printer Printer
	// Logger receives warnings about messages that are not events
	// (default slog.Default()).
	Logger *slog.Logger
}

func (c *Config) validate() error {
	if c.URL == "" {
		c.URL = DefaultURL
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Since.Revision < 0 || c.Since.Age < 0 {
		return errors.New("tap: Since must not be negative")
	}
	if c.Since.Revision > 0 && c.Since.Age > 0 {
		return errors.New("tap: Since takes a revision or an age, not both")
	}
	return nil
}

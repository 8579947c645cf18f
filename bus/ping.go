package bus

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go"
)

// Ping connects to the NATS server at url with creds and round-trips once;
// the API server's /readyz uses it.
func Ping(ctx context.Context, url string, creds Credentials) error {
	opts, err := creds.options("kubebus-readyz")
	if err != nil {
		return fmt.Errorf("connecting to nats %s: %w", url, err)
	}
	nc, err := nats.Connect(url, append(opts, nats.NoReconnect())...)
	if err != nil {
		return fmt.Errorf("connecting to nats %s: %w", url, err)
	}
	defer nc.Close()
	if err := nc.FlushWithContext(ctx); err != nil {
		return fmt.Errorf("pinging nats %s: %w", url, err)
	}
	return nil
}

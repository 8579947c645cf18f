package bus

import (
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Connect dials NATS with reconnects that never give up (a NATS restart must
// not end a component) and returns the connection and its JetStream context.
func Connect(url, name string) (*nats.Conn, jetstream.JetStream, error) {
	nc, err := nats.Connect(url, nats.Name(name), nats.MaxReconnects(-1), nats.ReconnectWait(250*time.Millisecond),
		nats.RetryOnFailedConnect(true), nats.ReconnectBufSize(64<<20))
	if err != nil {
		return nil, nil, fmt.Errorf("connecting to nats %s: %w", url, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("opening jetstream: %w", err)
	}
	return nc, js, nil
}

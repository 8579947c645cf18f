package natsserver

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestNoConsumerCap: a stream takes more than NATS's default cap of 1,000
// consumers (one per node on the node stream, plus tools).
func TestNoConsumerCap(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: starts an embedded NATS server")
	}
	s, err := Start(Config{StoreDir: t.TempDir(), Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	nc, err := nats.Connect(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1010 {
		if _, err := st.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: fmt.Sprintf("c%d", i), MemoryStorage: true}); err != nil {
			t.Fatalf("consumer %d: %v", i+1, err)
		}
	}
}

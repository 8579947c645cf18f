package natsserver_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kubebus/kubebus/bus/busauth"
)

// TestNoConsumerCap: a stream takes more than NATS's default cap of 1,000
// consumers (one per node on the node stream, plus tools).
func TestNoConsumerCap(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: starts an embedded NATS server")
	}
	c := newCluster(t)
	_, js := c.connect(t, busauth.PublisherUser)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"kube.s.>"}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1010 {
		if _, err := st.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: fmt.Sprintf("c%d", i), MemoryStorage: true}); err != nil {
			t.Fatalf("consumer %d: %v", i+1, err)
		}
	}
}

package informer

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go/jetstream"
)

// removeLegacyDurable deletes the durable consumer this informer had under
// the name older kubebus gave it (Config.legacyDurableName), so that an
// upgrade leaves no consumer behind that nobody reads (it would show in
// `kubebus tap lag` until NATS let it go after an hour without a reader).
// It is best effort: a failure is logged at debug level and the informer
// goes on. Run calls it once the cache is loaded, when the bus answers.
func (i *Informer[T]) removeLegacyDurable(ctx context.Context) {
	old := i.cfg.legacyDurableName()
	if old == i.durable || i.cfg.Narrow {
		// A narrowed identity may not touch the old name (the bus would
		// log a permission violation); NATS drops the consumer after an
		// hour without a reader.
		return
	}
	ctx, cancel := apiCtx(ctx)
	defer cancel()
	err := i.cfg.JetStream.DeleteConsumer(ctx, i.cfg.liveStream(), old)
	switch {
	case err == nil:
		i.log.Debug("deleted the durable consumer of the old name", "stream", i.cfg.liveStream(), "consumer", old)
	case errors.Is(err, jetstream.ErrConsumerNotFound):
	default:
		i.log.Debug("could not delete the durable consumer of the old name", "stream", i.cfg.liveStream(), "consumer", old, "err", err)
	}
}

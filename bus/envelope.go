package bus

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go"
	segjson "github.com/segmentio/encoding/json"

	"github.com/kubebus/kubebus/internal/storedobj"
)

// EventType says what happened to an object.
type EventType string

// Event types. Gap is a control event: revisions From..To could not be
// republished.
const (
	Added    EventType = "ADDED"
	Modified EventType = "MODIFIED"
	Deleted  EventType = "DELETED"
	Gap      EventType = "GAP"
	// Progress says every object change up to Revision is on the bus.
	Progress EventType = "PROGRESS"
)

// Header names.
const (
	HeaderRevision  = "Kube-Revision"
	HeaderType      = "Kube-Type"
	HeaderResource  = "Kube-Resource"
	HeaderChainPrev = "Kube-Chain-Prev"
	HeaderHistSeq   = "Kube-History-Seq"
)

// Event is the message body on every object subject.
type Event struct {
	Type EventType `json:"type"`
	// Revision is the etcd revision of the change; the object's
	// resourceVersion after it (for DELETED: the deletion's revision).
	Revision int64 `json:"revision"`
	// PrevRevision is the revision of the previous event on the whole bus
	// (0 for the first).
	PrevRevision int64  `json:"prevRevision"`
	Group        string `json:"group,omitempty"`
	Resource     string `json:"resource,omitempty"`
	Namespace    string `json:"namespace,omitempty"`
	Name         string `json:"name,omitempty"`
	// Object is the object as stored (without resourceVersion) when it is
	// stored as JSON: the new state, or for DELETED the last state.
	Object json.RawMessage `json:"object,omitempty"`
	// ObjectProto is the object as stored when it is stored in Kubernetes'
	// protobuf envelope (pods; see internal/storedobj), in place of Object.
	// Readers that want the stored bytes either way call Stored.
	ObjectProto []byte `json:"objectProto,omitempty"`
	// Previous is the state before a MODIFIED change. The publisher does
	// not send it (it doubled every update's bytes): it is the Object of
	// the object's message at PreviousRevision on KUBE_HISTORY. Messages
	// written by earlier publishers may carry it, and the tap fills it in
	// for what it prints.
	Previous json.RawMessage `json:"previous,omitempty"`
	// PreviousRevision is the revision of the object's state before a
	// MODIFIED change (for DELETED, of its last state).
	PreviousRevision int64 `json:"previousRevision,omitempty"`
	// From and To bound a GAP.
	From int64 `json:"from,omitempty"`
	To   int64 `json:"to,omitempty"`
}

// Stored returns the object's bytes as stored, JSON or protobuf.
func (e *Event) Stored() []byte {
	if len(e.ObjectProto) > 0 {
		return e.ObjectProto
	}
	return e.Object
}

// SetStored sets the object from its stored bytes, into ObjectProto when
// they are in the protobuf envelope and into Object otherwise.
func (e *Event) SetStored(data []byte) {
	if storedobj.IsProtobuf(data) {
		e.Object, e.ObjectProto = nil, data
		return
	}
	e.Object, e.ObjectProto = data, nil
}

// Key returns the event's object key.
func (e *Event) Key() ObjectKey {
	return ObjectKey{Group: e.Group, Resource: e.Resource, Namespace: e.Namespace, Name: e.Name}
}

// Encode is the message body of ev. It fails when Object or Previous is
// not JSON, or ObjectProto is not a protobuf envelope that parses (the
// object inside is not decoded); the raw values are checked, then copied
// as they are (the API server stores compact encoding/json output, which
// is what encoding/json would make of it again).
//
// Envelopes are encoded and decoded with segmentio's drop-in for
// encoding/json: every consumer decodes every event it reads, and
// encoding/json scans a raw value twice (validity, then skip) where it
// scans once, several times faster. The objects inside are still
// decoded by each consumer as it likes.
func Encode(ev *Event) ([]byte, error) {
	if len(ev.Object) > 0 && !segjson.Valid(ev.Object) {
		return nil, fmt.Errorf("bus: encoding event: the object of %s at revision %d is not JSON", ev.Name, ev.Revision)
	}
	if len(ev.ObjectProto) > 0 && (len(ev.Object) > 0 || !storedobj.Valid(ev.ObjectProto)) {
		return nil, fmt.Errorf("bus: encoding event: the protobuf object of %s at revision %d is not an envelope that parses, or comes with a JSON one", ev.Name, ev.Revision)
	}
	if len(ev.Previous) > 0 && !segjson.Valid(ev.Previous) {
		return nil, fmt.Errorf("bus: encoding event: the previous state of %s at revision %d is not JSON", ev.Name, ev.Revision)
	}
	return encodeChecked(ev)
}

// EncodeLean is ev's message body without the previous state, for an
// event whose Object was checked already (by Encode): the raw value is
// copied as it is.
func EncodeLean(ev *Event) ([]byte, error) {
	c := *ev
	c.Previous = nil
	return encodeChecked(&c)
}

// encodeChecked encodes an event whose raw values are known to be JSON,
// copying them as they are: with segmentio's EscapeHTML the raw values
// would be compacted (copied byte by byte) again. Without it, <, > and &
// in the envelope's own strings stay as they are, which is still JSON
// (and API names have none).
func encodeChecked(ev *Event) ([]byte, error) {
	buf := make([]byte, 0, len(ev.Object)+len(ev.ObjectProto)*4/3+len(ev.Previous)+256) // the envelope's fields usually fit in 256 bytes
	data, err := segjson.Append(buf, ev, segjson.SortMapKeys|segjson.TrustRawMessage)
	if err != nil {
		return nil, fmt.Errorf("bus: encoding event: %w", err)
	}
	return data, nil
}

// Decode parses a bus message body. It rejects messages that are not events.
func Decode(data []byte) (*Event, error) {
	var e Event
	if err := segjson.Unmarshal(data, &e); err != nil {
		return nil, fmt.Errorf("bus: decoding event: %w", err)
	}
	switch e.Type {
	case Added, Modified, Deleted:
		if e.Revision <= 0 || e.Resource == "" || e.Name == "" || len(e.Object) == 0 && len(e.ObjectProto) == 0 {
			return nil, fmt.Errorf("bus: event %s at revision %d is incomplete", e.Type, e.Revision)
		}
	case Gap:
		if e.From <= 0 || e.To < e.From {
			return nil, fmt.Errorf("bus: gap event %d..%d is malformed", e.From, e.To)
		}
	case Progress:
		if e.Revision <= 0 {
			return nil, fmt.Errorf("bus: progress event without a revision")
		}
	default:
		return nil, fmt.Errorf("bus: unknown event type %q", e.Type)
	}
	return &e, nil
}

// HeaderInt reads an integer header (0 when absent or malformed).
func HeaderInt(h nats.Header, name string) int64 {
	n, _ := strconv.ParseInt(h.Get(name), 10, 64)
	return n
}

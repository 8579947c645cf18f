package publish

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/bus"
	"github.com/kubebus/kubebus/internal/storedobj"
)

// flakyJS fails the asynchronous publish of chosen messages once each, as
// if the connection had dropped them.
type flakyJS struct {
	jetstream.JetStream
	mu   sync.Mutex
	fail map[string]bool // "<stream subject prefix>@<revision>" still to fail
}

func (f *flakyJS) PublishMsgAsync(msg *nats.Msg, opts ...jetstream.PublishOpt) (jetstream.PubAckFuture, error) {
	f.mu.Lock()
	for k := range f.fail {
		var prefix string
		var rev int64
		if _, err := fmt.Sscanf(k, "%s %d", &prefix, &rev); err == nil && len(msg.Subject) >= len(prefix) &&
			msg.Subject[:len(prefix)] == prefix && msg.Header.Get(bus.HeaderRevision) == strconv.FormatInt(rev, 10) {
			delete(f.fail, k)
			f.mu.Unlock()
			return nil, fmt.Errorf("test: dropping %s at revision %d", msg.Subject, rev)
		}
	}
	f.mu.Unlock()
	return f.JetStream.PublishMsgAsync(msg, opts...)
}

// batchSource hands the publisher every change the source has before the
// first one, so that many are in flight at once.
type batchSource struct {
	Source
	n int // changes to gather (or what arrives in a second)
}

func (b batchSource) Changes(ctx context.Context, from int64) (<-chan Change, func() error) {
	in, wait := b.Source.Changes(ctx, from)
	out := make(chan Change, b.n)
	go func() {
		defer close(out)
		timeout := time.After(time.Second)
	gather:
		for len(out) < b.n {
			select {
			case c, ok := <-in:
				if !ok {
					return
				}
				out <- c
			case <-timeout:
				break gather
			}
		}
		for c := range in {
			select {
			case out <- c:
			case <-ctx.Done():
			}
		}
	}()
	return out, func() error {
		for range in {
		}
		return wait()
	}
}

// TestPublishSendsAgainAfterALostMessage: with many revisions in flight, a
// state message and a history message that are not stored make the
// publisher send again from there: the history holds every revision once,
// in order, and the state stream the newest revision of every object, even
// where a later revision of the same object was stored before the lost one.
func TestPublishSendsAgainAfterALostMessage(t *testing.T) {
	_, js := startNATS(t)
	src := newFakeSource()
	const puts, objects = 100, 10 // all in flight at once (window > puts)
	for i := 0; i < puts; i++ {
		src.put(fmt.Sprintf("/registry/core/configmaps/default/cm-%d", i%objects), fmt.Sprintf(`{"i":%d}`, i))
	}
	key := func(i int) bus.ObjectKey {
		return bus.ObjectKey{Resource: "configmaps", Namespace: "default", Name: fmt.Sprintf("cm-%d", i)}
	}
	state := bus.StateSubject(key(3))
	hist := bus.HistorySubject(key(9))
	flaky := &flakyJS{JetStream: js, fail: map[string]bool{
		fmt.Sprintf("%s %d", state, 4): true, // cm-3's state at revision 4; revisions 14, 24... of cm-3 follow in flight
		fmt.Sprintf("%s %d", hist, 50): true, // cm-9's history message at revision 50
	}}
	stop := runPublisher(t, batchSource{Source: src, n: puts}, alwaysLeader{}, flaky)
	revs, _ := historyRevisions(t, js, puts)
	stop()
	if len(revs) != puts {
		t.Fatalf("published %d revisions, want %d", len(revs), puts)
	}
	for i, r := range revs {
		if r != int64(i+1) {
			t.Fatalf("position %d holds revision %d, want %d", i, r, i+1)
		}
	}
	if len(flaky.fail) != 0 {
		t.Fatalf("messages meant to be lost were never sent: %v", flaky.fail)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := js.Stream(ctx, bus.StateStream)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < objects; i++ {
		msg, err := st.GetLastMsgForSubject(ctx, bus.StateSubject(key(i)))
		if err != nil {
			t.Fatalf("state of cm-%d: %v", i, err)
		}
		// cm-i was last written by put number puts-objects+i, revision +1.
		if got, want := bus.HeaderInt(msg.Header, bus.HeaderRevision), int64(puts-objects+i+1); got != want {
			t.Errorf("state of cm-%d is at revision %d, want %d", i, got, want)
		}
	}
}

// TestPublishSkipsValuesThatAreNotJSON: a value that is not JSON is not
// published; the revisions around it are, the next change of the same
// object included (events do not carry the previous state).
func TestPublishSkipsValuesThatAreNotJSON(t *testing.T) {
	_, js := startNATS(t)
	src := newFakeSource()
	src.put("/registry/core/configmaps/default/a", `{"i":1}`)
	src.put("/registry/core/configmaps/default/bad", `{not json`)
	src.put("/registry/core/configmaps/default/bad", `{"i":3}`) // its previous state is not JSON
	src.put("/registry/core/configmaps/default/b", `{"i":4}`)
	stop := runPublisher(t, src, alwaysLeader{}, js)
	revs, evs := historyRevisions(t, js, 3)
	stop()
	if fmt.Sprint(revs) != "[1 3 4]" {
		t.Fatalf("published revisions %v, want [1 3 4]", revs)
	}
	if string(evs[1].Object) != `{"i":3}` || evs[1].PreviousRevision != 2 {
		t.Fatalf("revision 3 published as %+v", evs[1])
	}
}

// TestPublishSkipsProtobufValuesThatDoNotParse: a value with the protobuf
// envelope's prefix whose envelope does not parse is not published, and
// its deletion goes out with the bare key; a good protobuf pod goes out
// as stored.
func TestPublishSkipsProtobufValuesThatDoNotParse(t *testing.T) {
	_, js := startNATS(t)
	good, err := storedobj.EncodeProtobuf(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "good", Namespace: "default"}}, corev1.SchemeGroupVersion.WithKind("Pod"))
	if err != nil {
		t.Fatal(err)
	}
	src := newFakeSource()
	src.put("/registry/core/pods/default/good", string(good))
	src.put("/registry/core/pods/default/bad", "k8s\x00\x0a\xff\xff")
	src.del("/registry/core/pods/default/bad")
	stop := runPublisher(t, src, alwaysLeader{}, js)
	revs, evs := historyRevisions(t, js, 2)
	stop()
	if fmt.Sprint(revs) != "[1 3]" {
		t.Fatalf("published revisions %v, want [1 3]", revs)
	}
	if !bytes.Equal(evs[0].ObjectProto, good) || len(evs[0].Object) != 0 {
		t.Errorf("revision 1 published as %+v", evs[0])
	}
	if evs[1].Type != bus.Deleted || len(evs[1].ObjectProto) != 0 || !bytes.Contains(evs[1].Object, []byte(`"name":"bad"`)) {
		t.Errorf("revision 3 published as %s %q %q", evs[1].Type, evs[1].Object, evs[1].ObjectProto)
	}
}

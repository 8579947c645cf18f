package openapi

import (
	"crypto/sha512"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"

	openapiv2 "github.com/google/gnostic-models/openapiv2"
	openapiv3 "github.com/google/gnostic-models/openapiv3"
	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Resource describes one served resource.
type Resource struct {
	GVK          schema.GroupVersionKind
	Plural       string // "deployments"
	Namespaced   bool
	Subresources []string       // e.g. "status", "scale", "binding", "log", "finalize"
	Object       runtime.Object // zero value of the kind, e.g. &appsv1.Deployment{}
	List         runtime.Object // e.g. &appsv1.DeploymentList{}
}

// Media types of the encoded documents.
const (
	mediaJSON    = "application/json"
	mediaV2Proto = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
	mediaV3Proto = "application/com.github.proto-openapi.spec.v3.v1.0+protobuf"
)

// Documents holds the encoded documents, built once by Build.
type Documents struct {
	v2JSON  encoded
	v2Proto *lazy
	groups  map[string]*groupDoc // by index key: api/v1, apis/apps/v1; fixed by Build

	mu    sync.RWMutex
	index encoded
	extra map[string]*groupDoc // custom resources' group versions, by index key
}

// encoded is one representation of a document.
type encoded struct {
	data        []byte
	etag        string // unquoted
	contentType string
}

// groupDoc is the v3 document of one group-version.
type groupDoc struct {
	hash  string // of the JSON form; the index URL carries it
	url   string // server-relative, with the hash
	json  encoded
	proto *lazy
}

// lazy is a protobuf representation, encoded from the JSON on first use:
// gnostic's parser costs more than the rest of Build together, and most
// clients (kubectl's v3 reads among them) only ask for JSON.
type lazy struct {
	once        sync.Once
	contentType string
	encode      func() ([]byte, error)
	doc         encoded
	err         error
}

func newLazy(contentType string, encode func() ([]byte, error)) *lazy {
	return &lazy{contentType: contentType, encode: encode}
}

// get returns the encoding, computing it once.
func (l *lazy) get() (*encoded, error) {
	l.once.Do(func() {
		data, err := l.encode()
		if err != nil {
			l.err = err
			return
		}
		l.doc = encoded{data: data, etag: hash(data), contentType: l.contentType}
	})
	return &l.doc, l.err
}

// errInvalidResource is wrapped by Build's errors about its input.
var errInvalidResource = errors.New("openapi: invalid resource")

// Build reflects over the resources' Go types and encodes the v2 document,
// the v3 index and one v3 document per group-version. It is meant to run
// once at startup; its errors name the resource or type at fault.
func Build(resources []Resource) (*Documents, error) {
	reg := newRegistry()
	pb := newPathBuilder(reg)
	var order []schema.GroupVersion
	byGV := map[schema.GroupVersion][]pathItem{}
	seen := map[schema.GroupVersionResource]bool{}
	for _, res := range resources {
		gvr := res.GVK.GroupVersion().WithResource(res.Plural)
		if err := res.validate(); err != nil {
			return nil, fmt.Errorf("%w %s: %w", errInvalidResource, gvr, err)
		}
		if seen[gvr] {
			return nil, fmt.Errorf("%w %s: listed twice", errInvalidResource, gvr)
		}
		seen[gvr] = true
		gv := res.GVK.GroupVersion()
		if _, ok := byGV[gv]; !ok {
			order = append(order, gv)
			byGV[gv] = []pathItem{pb.apiResources(gv)}
		}
		items, err := pb.resource(res)
		if err != nil {
			return nil, fmt.Errorf("%w %s: %w", errInvalidResource, gvr, err)
		}
		byGV[gv] = append(byGV[gv], items...)
	}
	if err := reg.err(); err != nil {
		return nil, err
	}

	d := &Documents{groups: map[string]*groupDoc{}, extra: map[string]*groupDoc{}}
	var all []pathItem
	for _, gv := range order {
		all = append(all, byGV[gv]...)
	}
	v2, err := json.Marshal(v2Document(all, reg.defs))
	if err != nil {
		return nil, fmt.Errorf("openapi: encoding v2 document: %w", err)
	}
	d.v2JSON = encoded{data: v2, etag: hash(v2), contentType: mediaJSON}
	d.v2Proto = newLazy(mediaV2Proto, func() ([]byte, error) { return v2Protobuf(v2) })

	for _, gv := range order {
		key := gvKey(gv)
		g, err := encodeV3(key, v3Document(byGV[gv], reg.defs))
		if err != nil {
			return nil, err
		}
		d.groups[key] = g
	}
	if err := d.reindexLocked(); err != nil {
		return nil, err
	}
	return d, nil
}

func (r *Resource) validate() error {
	switch {
	case r.GVK.Version == "" || r.GVK.Kind == "":
		return errors.New("GVK needs a version and a kind")
	case r.Plural == "":
		return errors.New("plural name is empty")
	}
	for name, obj := range map[string]runtime.Object{"Object": r.Object, "List": r.List} {
		if obj == nil {
			return fmt.Errorf("%s is nil", name)
		}
		if t := reflect.TypeOf(obj); t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
			return fmt.Errorf("%s is a %s, not a pointer to a struct", name, t)
		}
	}
	return nil
}

// v2Protobuf is the protobuf client-go's OpenAPISchema() asks for: the
// JSON document parsed by gnostic.
func v2Protobuf(data []byte) ([]byte, error) {
	doc, err := openapiv2.ParseDocument(data)
	if err != nil {
		return nil, fmt.Errorf("openapi: parsing v2 document with gnostic: %w", err)
	}
	pb, err := proto.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("openapi: encoding v2 protobuf: %w", err)
	}
	return pb, nil
}

// encodeV3 encodes one group-version document as JSON, and as protobuf
// on first use.
func encodeV3(key string, doc map[string]any) (*groupDoc, error) {
	data, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("openapi: encoding v3 document %s: %w", key, err)
	}
	h := hash(data)
	return &groupDoc{
		hash: h,
		url:  "/openapi/v3/" + key + "?hash=" + h,
		json: encoded{data: data, etag: h, contentType: mediaJSON},
		proto: newLazy(mediaV3Proto, func() ([]byte, error) {
			parsed, err := openapiv3.ParseDocument(data)
			if err != nil {
				return nil, fmt.Errorf("openapi: parsing v3 document %s with gnostic: %w", key, err)
			}
			pb, err := proto.Marshal(parsed)
			if err != nil {
				return nil, fmt.Errorf("openapi: encoding v3 protobuf %s: %w", key, err)
			}
			return pb, nil
		}),
	}, nil
}

// hash is the upper-case hex SHA-512 of data, the form upstream servers
// put in ?hash= and ETags.
func hash(data []byte) string {
	return fmt.Sprintf("%X", sha512.Sum512(data))
}

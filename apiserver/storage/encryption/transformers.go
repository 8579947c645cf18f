package encryption

import (
	"context"
	"crypto/aes"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	apiserverv1 "k8s.io/apiserver/pkg/apis/apiserver/v1"
	"k8s.io/apiserver/pkg/storage/value"
	aestransformer "k8s.io/apiserver/pkg/storage/value/encrypt/aes"
	"k8s.io/apiserver/pkg/storage/value/encrypt/identity"
	"k8s.io/apiserver/pkg/storage/value/encrypt/secretbox"
)

// Upstream's provider prefixes; each is followed by the key name and ":".
const (
	aesCBCPrefix    = "k8s:enc:aescbc:v1:"
	aesGCMPrefix    = "k8s:enc:aesgcm:v1:"
	secretboxPrefix = "k8s:enc:secretbox:v1:"
)

// Transformers encrypts and decrypts stored values by the resource their
// etcd key names. It is safe for concurrent use; a nil *Transformers
// transforms nothing.
type Transformers struct {
	// byResource holds a transformer per configured group and resource;
	// Resource "*" covers a whole group and Group "*" every group.
	byResource map[schema.GroupResource]value.Transformer
}

// TransformToStorage encrypts data, stored under key, with the first
// provider configured for its resource.
func (t *Transformers) TransformToStorage(ctx context.Context, key string, data []byte) ([]byte, error) {
	tr := t.forKey(key)
	if tr == nil {
		return data, nil
	}
	return tr.TransformToStorage(ctx, data, value.DefaultContext(key))
}

// TransformFromStorage decrypts data read from key. stale reports that it
// was not written by the first provider: writing it again would re-encrypt
// it with the current key.
func (t *Transformers) TransformFromStorage(ctx context.Context, key string, data []byte) (out []byte, stale bool, err error) {
	tr := t.forKey(key)
	if tr == nil {
		return data, false, nil
	}
	return tr.TransformFromStorage(ctx, data, value.DefaultContext(key))
}

// forKey returns the transformer of the resource an object key belongs to,
// matched as upstream matches: the resource itself, then its group's
// wildcard, then the wildcard of every group; nil when none is configured.
func (t *Transformers) forKey(key string) value.Transformer {
	gr, ok := resourceOf(key)
	if !ok || t == nil {
		return nil
	}
	if tr := t.byResource[gr]; tr != nil {
		return tr
	}
	if tr := t.byResource[schema.GroupResource{Group: gr.Group, Resource: "*"}]; tr != nil {
		return tr
	}
	return t.byResource[anyResource]
}

// resourceOf reads the group and resource from an object key,
// /registry/<group|core>/<resource>/...; ok is false for any other key.
func resourceOf(key string) (gr schema.GroupResource, ok bool) {
	rest, ok := strings.CutPrefix(key, "/registry/")
	if !ok {
		return gr, false
	}
	group, rest, ok := strings.Cut(rest, "/")
	if !ok {
		return gr, false
	}
	resource, _, ok := strings.Cut(rest, "/")
	if !ok {
		return gr, false
	}
	if group == "core" {
		group = ""
	}
	return schema.GroupResource{Group: group, Resource: resource}, true
}

// build makes the transformers of a validated configuration. As upstream,
// a resource an earlier wildcard already covers is an error: the later
// rule could never apply.
func build(cfg *apiserverv1.EncryptionConfiguration) (*Transformers, error) {
	chains := map[schema.GroupResource][]value.PrefixTransformer{}
	for _, rc := range cfg.Resources {
		providers, err := prefixTransformers(rc.Providers)
		if err != nil {
			return nil, err
		}
		for _, res := range rc.Resources {
			gr := schema.ParseGroupResource(res)
			for _, wildcard := range []schema.GroupResource{{Group: gr.Group, Resource: "*"}, anyResource} {
				if _, masked := chains[wildcard]; masked {
					return nil, fmt.Errorf("resource %q is masked by earlier rule %q", yamlString(gr), yamlString(wildcard))
				}
			}
			chains[gr] = append(chains[gr], providers...)
		}
	}
	t := &Transformers{byResource: make(map[schema.GroupResource]value.Transformer, len(chains))}
	for gr, providers := range chains {
		t.byResource[gr] = value.NewPrefixTransformers(errors.New("no matching prefix found"), providers...)
	}
	return t, nil
}

// yamlString writes a group and resource the way the configuration does.
func yamlString(gr schema.GroupResource) string {
	if gr.Group == "" && gr.Resource == "*" {
		return "*."
	}
	return gr.String()
}

// prefixTransformers makes one prefixed transformer per provider, in order.
func prefixTransformers(providers []apiserverv1.ProviderConfiguration) ([]value.PrefixTransformer, error) {
	out := make([]value.PrefixTransformer, 0, len(providers))
	for _, p := range providers {
		var pt value.PrefixTransformer
		var err error
		switch {
		case p.AESGCM != nil:
			pt, err = keyed(aesGCMPrefix, p.AESGCM.Keys, func(key []byte) (value.Transformer, error) {
				block, err := aes.NewCipher(key)
				if err != nil {
					return nil, err
				}
				return aestransformer.NewGCMTransformer(block)
			})
		case p.AESCBC != nil:
			pt, err = keyed(aesCBCPrefix, p.AESCBC.Keys, func(key []byte) (value.Transformer, error) {
				block, err := aes.NewCipher(key)
				if err != nil {
					return nil, err
				}
				return aestransformer.NewCBCTransformer(block), nil
			})
		case p.Secretbox != nil:
			pt, err = keyed(secretboxPrefix, p.Secretbox.Keys, func(key []byte) (value.Transformer, error) {
				if len(key) != 32 {
					return nil, fmt.Errorf("expected key size 32 for secretbox provider, got %d", len(key))
				}
				return secretbox.NewSecretboxTransformer([32]byte(key)), nil
			})
		case p.Identity != nil:
			pt = value.PrefixTransformer{Prefix: []byte{}, Transformer: identity.NewEncryptCheckTransformer()}
		default:
			return nil, errors.New(noProviderMsg)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, pt)
	}
	return out, nil
}

// keyed makes a provider's transformer: under its prefix, one transformer
// per key, each under "<key name>:"; the first key encrypts.
func keyed(prefix string, keys []apiserverv1.Key, newTransformer func(key []byte) (value.Transformer, error)) (value.PrefixTransformer, error) {
	perKey := make([]value.PrefixTransformer, 0, len(keys))
	for _, k := range keys {
		secret, err := base64.StdEncoding.DecodeString(k.Secret)
		if err != nil {
			return value.PrefixTransformer{}, fmt.Errorf("could not obtain secret for named key %s: %w", k.Name, err)
		}
		tr, err := newTransformer(secret)
		if err != nil {
			return value.PrefixTransformer{}, fmt.Errorf("error while creating transformer for named key %s: %w", k.Name, err)
		}
		perKey = append(perKey, value.PrefixTransformer{Prefix: []byte(k.Name + ":"), Transformer: tr})
	}
	return value.PrefixTransformer{
		Prefix:      []byte(prefix),
		Transformer: value.NewPrefixTransformers(errors.New("no matching key was found for the provided transformer"), perKey...),
	}, nil
}

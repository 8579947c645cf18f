// Package encryption encrypts stored objects at rest, as upstream's
// kube-apiserver --encryption-provider-config does.
//
// Load reads an EncryptionConfiguration (apiserver.config.k8s.io/v1) and
// builds, for each configured resource, a chain of providers with upstream's
// own transformers (k8s.io/apiserver/pkg/storage/value): a stored value is
// k8s:enc:<provider>:v1:<key name>: followed by the ciphertext, with the etcd
// key as authenticated data, byte for byte what kube-apiserver writes. The
// first provider of a resource encrypts every write; every provider is tried
// on reads, and a value read with any but the first is reported stale.
//
// Rotating a key: put the new key (or provider) first and keep the old one
// after it, restart the API server, rewrite every object (kubectl get
// secrets -A -o json | kubectl replace -f -), then drop the old key.
//
// The storage package calls TransformToStorage and TransformFromStorage with
// each object's etcd key (/registry/<group|core>/<resource>/...); values of
// resources the configuration does not name pass through unchanged.
package encryption

import (
	"errors"
	"fmt"
	"os"

	apiserverv1 "k8s.io/apiserver/pkg/apis/apiserver/v1"
	"sigs.k8s.io/yaml"
)

// Load reads the encryption provider configuration file at path and builds
// its transformers.
func Load(path string) (*Transformers, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("error reading encryption provider configuration file %q: %w", path, err)
	}
	cfg, err := decode(data)
	if err != nil {
		return nil, fmt.Errorf("error decoding encryption provider configuration file %q: %w", path, err)
	}
	if err := validate(cfg).ToAggregate(); err != nil {
		return nil, fmt.Errorf("invalid encryption provider configuration file %q: %w", path, err)
	}
	t, err := build(cfg)
	if err != nil {
		return nil, fmt.Errorf("error while building transformers from %q: %w", path, err)
	}
	return t, nil
}

// decode parses the YAML or JSON of an EncryptionConfiguration strictly: an
// unknown or duplicated field is an error naming it.
func decode(data []byte) (*apiserverv1.EncryptionConfiguration, error) {
	if len(data) == 0 {
		return nil, errors.New("the file is empty")
	}
	var cfg apiserverv1.EncryptionConfiguration
	if err := yaml.UnmarshalStrict(data, &cfg); err != nil {
		return nil, err
	}
	gv := apiserverv1.SchemeGroupVersion.String()
	if cfg.APIVersion != gv || cfg.Kind != "EncryptionConfiguration" {
		return nil, fmt.Errorf("no kind %q is registered for version %q: want kind EncryptionConfiguration, apiVersion %s", cfg.Kind, cfg.APIVersion, gv)
	}
	return &cfg, nil
}

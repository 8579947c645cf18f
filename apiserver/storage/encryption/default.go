package encryption

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiserverv1 "k8s.io/apiserver/pkg/apis/apiserver/v1"
	"sigs.k8s.io/yaml"
)

// WriteDefault writes, when no file exists at path, a configuration that
// encrypts Secrets with a freshly generated secretbox key and still reads
// Secrets stored in the clear (identity second), readable by its owner
// only. An existing file is left as it is.
func WriteDefault(path string) error {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return fmt.Errorf("generating an encryption key: %w", err)
	}
	data, err := yaml.Marshal(&apiserverv1.EncryptionConfiguration{
		TypeMeta: metav1.TypeMeta{APIVersion: apiserverv1.SchemeGroupVersion.String(), Kind: "EncryptionConfiguration"},
		Resources: []apiserverv1.ResourceConfiguration{{
			Resources: []string{"secrets"},
			Providers: []apiserverv1.ProviderConfiguration{
				{Secretbox: &apiserverv1.SecretboxConfiguration{Keys: []apiserverv1.Key{{Name: "key1", Secret: base64.StdEncoding.EncodeToString(key)}}}},
				{Identity: &apiserverv1.IdentityConfiguration{}},
			},
		}},
	})
	if err != nil {
		return fmt.Errorf("encoding the default encryption configuration: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("writing encryption configuration: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("writing encryption configuration: %w", err)
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path)
		return fmt.Errorf("writing encryption configuration %s: %w", path, err)
	}
	return nil
}

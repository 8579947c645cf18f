package validation

import (
	"encoding/json"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const immutableWhenSetMsg = "field is immutable when `immutable` is set"

var (
	dataPath       = field.NewPath("data")
	binaryDataPath = field.NewPath("binaryData")
	immutablePath  = field.NewPath("immutable")
)

// validateConfigMap checks keys and the 1 MiB limit on all values together.
func validateConfigMap(cm *corev1.ConfigMap) field.ErrorList {
	errs := validateMeta(&cm.ObjectMeta, true, apivalidation.NameIsDNSSubdomain)
	size := 0
	for _, key := range sortedKeys(cm.Data) {
		p := dataPath.Key(key)
		errs = append(errs, messages(p, key, validation.IsConfigMapKey(key))...)
		if _, dup := cm.BinaryData[key]; dup {
			errs = append(errs, field.Invalid(p, key, "duplicate of key present in binaryData"))
		}
		size += len(cm.Data[key])
	}
	for _, key := range sortedKeys(cm.BinaryData) {
		errs = append(errs, messages(binaryDataPath.Key(key), key, validation.IsConfigMapKey(key))...)
		size += len(cm.BinaryData[key])
	}
	if size > corev1.MaxSecretSize {
		errs = append(errs, field.TooLong(dataPath, "", corev1.MaxSecretSize))
	}
	return errs
}

// validateConfigMapUpdate adds to the create checks that an immutable
// ConfigMap keeps its data and stays immutable.
func validateConfigMapUpdate(cm, old *corev1.ConfigMap) field.ErrorList {
	errs := validateMetaUpdate(&cm.ObjectMeta, &old.ObjectMeta)
	if isTrue(old.Immutable) {
		if !isTrue(cm.Immutable) {
			errs = append(errs, field.Forbidden(immutablePath, immutableWhenSetMsg))
		}
		if !reflect.DeepEqual(cm.Data, old.Data) {
			errs = append(errs, field.Forbidden(dataPath, immutableWhenSetMsg))
		}
		if !reflect.DeepEqual(cm.BinaryData, old.BinaryData) {
			errs = append(errs, field.Forbidden(binaryDataPath, immutableWhenSetMsg))
		}
	}
	return append(errs, validateConfigMap(cm)...)
}

func isTrue(b *bool) bool { return b != nil && *b }

// validateSecret checks keys, the 1 MiB limit and the keys each built-in
// secret type requires.
func validateSecret(s *corev1.Secret) field.ErrorList {
	errs := validateMeta(&s.ObjectMeta, true, apivalidation.NameIsDNSSubdomain)
	size := 0
	for _, key := range sortedKeys(s.Data) {
		errs = append(errs, messages(dataPath.Key(key), key, validation.IsConfigMapKey(key))...)
		size += len(s.Data[key])
	}
	if size > corev1.MaxSecretSize {
		errs = append(errs, field.TooLong(dataPath, "", corev1.MaxSecretSize))
	}

	requireKeys := func(keys ...string) {
		for _, k := range keys {
			if _, ok := s.Data[k]; !ok {
				errs = append(errs, field.Required(dataPath.Key(k), ""))
			}
		}
	}
	requireJSON := func(key string) {
		b, ok := s.Data[key]
		if !ok {
			errs = append(errs, field.Required(dataPath.Key(key), ""))
			return
		}
		if err := json.Unmarshal(b, &map[string]any{}); err != nil {
			errs = append(errs, field.Invalid(dataPath.Key(key), "<secret contents redacted>", err.Error()))
		}
	}
	switch s.Type {
	case corev1.SecretTypeServiceAccountToken:
		if s.Annotations[corev1.ServiceAccountNameKey] == "" {
			errs = append(errs, field.Required(metadataPath.Child("annotations").Key(corev1.ServiceAccountNameKey), ""))
		}
	case corev1.SecretTypeDockercfg:
		requireJSON(corev1.DockerConfigKey)
	case corev1.SecretTypeDockerConfigJson:
		requireJSON(corev1.DockerConfigJsonKey)
	case corev1.SecretTypeBasicAuth:
		_, user := s.Data[corev1.BasicAuthUsernameKey]
		_, pass := s.Data[corev1.BasicAuthPasswordKey]
		if !user && !pass {
			requireKeys(corev1.BasicAuthUsernameKey, corev1.BasicAuthPasswordKey)
		}
	case corev1.SecretTypeSSHAuth:
		if len(s.Data[corev1.SSHAuthPrivateKey]) == 0 {
			errs = append(errs, field.Required(dataPath.Key(corev1.SSHAuthPrivateKey), ""))
		}
	case corev1.SecretTypeTLS:
		requireKeys(corev1.TLSCertKey, corev1.TLSPrivateKeyKey)
	}
	return errs
}

// validateSecretUpdate adds to the create checks that the type never
// changes and that an immutable Secret keeps its data.
func validateSecretUpdate(s, old *corev1.Secret) field.ErrorList {
	errs := validateMetaUpdate(&s.ObjectMeta, &old.ObjectMeta)
	errs = append(errs, apivalidation.ValidateImmutableField(s.Type, old.Type, field.NewPath("type"))...)
	if isTrue(old.Immutable) {
		if !isTrue(s.Immutable) {
			errs = append(errs, field.Forbidden(immutablePath, immutableWhenSetMsg))
		}
		if !reflect.DeepEqual(s.Data, old.Data) {
			errs = append(errs, field.Forbidden(dataPath, immutableWhenSetMsg))
		}
	}
	return append(errs, validateSecret(s)...)
}

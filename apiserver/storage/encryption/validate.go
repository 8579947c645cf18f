package encryption

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	apiserverv1 "k8s.io/apiserver/pkg/apis/apiserver/v1"
)

// The checks and messages follow upstream's
// k8s.io/apiserver/pkg/apis/apiserver/validation (which kubebus cannot
// import: it pulls in CEL for the other configuration types it validates).
const (
	atLeastOneRequiredFmt = "at least one %s is required"
	mandatoryFieldFmt     = "%s is a mandatory field for a %s"
	keyLenFmt             = "secret is not of the expected length, got %d, expected one of %v"
	base64Msg             = "secrets must be base64 encoded"
	noProviderMsg         = "provider does not contain any of the expected providers: KMS, AESGCM, AESCBC, Secretbox, Identity"
	moreThanOneMsg        = "more than one provider specified in a single element, should split into different list elements"
	kmsMsg                = "kms providers are not supported by kubebus: use aescbc, aesgcm, secretbox or identity"
	duplicateResourceMsg  = "the same resource cannot be specified multiple times"
	overlapMsg            = "using overlapping resources such as 'secrets' and '*.' in the same resource list is not allowed as they will be masked"
	capitalMsg            = "resource name should not contain capital letters"
	starMsg               = "use '*.' to encrypt all the resources from core API group or *.* to encrypt all resources"
	nonRESTMsg            = "resources which do not have REST API/s cannot be encrypted"
	eventsGroupMsg        = "'*.events.k8s.io' objects are stored using the 'events' API group in etcd. Use 'events' instead in the config file"
	extensionsGroupMsg    = "'extensions' group has been removed and cannot be used for encryption"
	acrossGroupsMsg       = "encrypting the same resource across groups is not supported"
)

var (
	aesKeySizes       = []int{16, 24, 32}
	secretboxKeySizes = []int{32}
	anyResource       = schema.GroupResource{Group: "*", Resource: "*"}
)

// validate checks an EncryptionConfiguration as upstream does.
func validate(c *apiserverv1.EncryptionConfiguration) field.ErrorList {
	root := field.NewPath("resources")
	if len(c.Resources) == 0 {
		return field.ErrorList{field.Required(root, fmt.Sprintf(atLeastOneRequiredFmt, root))}
	}
	var errs field.ErrorList
	for i, rc := range c.Resources {
		r, p := root.Index(i).Child("resources"), root.Index(i).Child("providers")
		if len(rc.Resources) == 0 {
			errs = append(errs, field.Required(r, fmt.Sprintf(atLeastOneRequiredFmt, r)))
		}
		errs = append(errs, validateOverlap(rc.Resources, r)...)
		for j, res := range rc.Resources {
			if msg := resourceNameProblem(res); msg != "" {
				errs = append(errs, field.Invalid(r.Index(j), res, msg))
			}
		}
		if len(rc.Providers) == 0 {
			errs = append(errs, field.Required(p, fmt.Sprintf(atLeastOneRequiredFmt, p)))
		}
		for j, pc := range rc.Providers {
			errs = append(errs, validateProvider(pc, p.Index(j))...)
		}
	}
	return errs
}

// validateOverlap rejects a list naming one resource twice, or a wildcard
// next to a resource it covers.
func validateOverlap(resources []string, path *field.Path) field.ErrorList {
	var duplicate, overlap bool
	grs := make([]schema.GroupResource, len(resources))
	for i, r := range resources {
		grs[i] = schema.ParseGroupResource(r)
	}
	for i, a := range grs {
		for j, b := range grs {
			switch {
			case i == j:
			case a == b:
				duplicate = true
			case a == anyResource || a.Group == b.Group && (a.Resource == "*" || b.Resource == "*"):
				overlap = true
			}
		}
	}
	var errs field.ErrorList
	if duplicate {
		errs = append(errs, field.Invalid(path, resources, duplicateResourceMsg))
	}
	if overlap {
		errs = append(errs, field.Invalid(path, resources, overlapMsg))
	}
	return errs
}

// resourceNameProblem says what is wrong with one resource of a list, or "".
func resourceNameProblem(res string) string {
	gr := schema.ParseGroupResource(res)
	switch {
	case strings.ToLower(res) != res:
		return capitalMsg
	case res == "*":
		return starMsg
	case res == "apiserveripinfo" || res == "serviceipallocations" || res == "servicenodeportallocations":
		return nonRESTMsg
	case gr.Group == "events.k8s.io":
		return eventsGroupMsg
	case gr.Group == "extensions":
		return extensionsGroupMsg
	case gr.Group == "*" && gr.Resource != "*":
		return acrossGroupsMsg
	}
	return ""
}

// validateProvider checks that one list element names exactly one provider
// kubebus supports, with valid keys.
func validateProvider(pc apiserverv1.ProviderConfiguration, path *field.Path) field.ErrorList {
	// The error shows the provider names, never the element (upstream's
	// shows the element, secrets and all).
	var names []string
	for name, set := range map[string]bool{"aesgcm": pc.AESGCM != nil, "aescbc": pc.AESCBC != nil, "secretbox": pc.Secretbox != nil, "identity": pc.Identity != nil, "kms": pc.KMS != nil} {
		if set {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	switch {
	case len(names) == 0:
		return field.ErrorList{field.Invalid(path, names, noProviderMsg)}
	case len(names) > 1:
		return field.ErrorList{field.Invalid(path, names, moreThanOneMsg)}
	case pc.KMS != nil:
		return field.ErrorList{field.Forbidden(path.Child("kms"), kmsMsg)}
	case pc.AESGCM != nil:
		return validateKeys(pc.AESGCM.Keys, path.Child("aesgcm", "keys"), aesKeySizes)
	case pc.AESCBC != nil:
		return validateKeys(pc.AESCBC.Keys, path.Child("aescbc", "keys"), aesKeySizes)
	case pc.Secretbox != nil:
		return validateKeys(pc.Secretbox.Keys, path.Child("secretbox", "keys"), secretboxKeySizes)
	}
	return nil
}

// validateKeys checks a provider's keys: at least one, each named, each a
// base64 secret of one of the sizes. Secrets never appear in the errors.
func validateKeys(keys []apiserverv1.Key, path *field.Path, sizes []int) field.ErrorList {
	if len(keys) == 0 {
		return field.ErrorList{field.Required(path, fmt.Sprintf(atLeastOneRequiredFmt, "keys"))}
	}
	var errs field.ErrorList
	for i, k := range keys {
		kp := path.Index(i)
		if k.Name == "" {
			errs = append(errs, field.Required(kp.Child("name"), fmt.Sprintf(mandatoryFieldFmt, "name", "key")))
		}
		if k.Secret == "" {
			errs = append(errs, field.Required(kp.Child("secret"), fmt.Sprintf(mandatoryFieldFmt, "secret", "key")))
			continue
		}
		secret, err := base64.StdEncoding.DecodeString(k.Secret)
		if err != nil {
			errs = append(errs, field.Invalid(kp.Child("secret"), "REDACTED", base64Msg))
			continue
		}
		if !slices.Contains(sizes, len(secret)) {
			errs = append(errs, field.Invalid(kp.Child("secret"), "REDACTED", fmt.Sprintf(keyLenFmt, len(secret), sizes)))
		}
	}
	return errs
}

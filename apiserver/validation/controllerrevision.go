package validation

import (
	"bytes"
	"encoding/json"

	appsv1 "k8s.io/api/apps/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateControllerRevision checks a ControllerRevision as upstream: a
// DNS subdomain name, data present, a non-negative revision number.
func validateControllerRevision(c *appsv1.ControllerRevision) field.ErrorList {
	errs := validateMeta(&c.ObjectMeta, true, apivalidation.NameIsDNSSubdomain)
	if c.Data.Raw == nil && c.Data.Object == nil {
		errs = append(errs, field.Required(field.NewPath("data"), "data is mandatory"))
	}
	return append(errs, validateNonnegative(c.Revision, field.NewPath("revision"))...)
}

// validateControllerRevisionUpdate adds that the data never changes (the
// revision number may: a rollback renumbers a revision).
func validateControllerRevisionUpdate(c, old *appsv1.ControllerRevision) field.ErrorList {
	errs := validateMetaUpdate(&c.ObjectMeta, &old.ObjectMeta)
	errs = append(errs, validateControllerRevision(c)...)
	if !sameJSON(c.Data.Raw, old.Data.Raw) {
		errs = append(errs, field.Invalid(field.NewPath("data"), "", "field is immutable"))
	}
	return errs
}

// sameJSON compares two JSON documents ignoring insignificant space.
func sameJSON(a, b []byte) bool {
	var ca, cb bytes.Buffer
	if json.Compact(&ca, a) != nil || json.Compact(&cb, b) != nil {
		return bytes.Equal(a, b)
	}
	return bytes.Equal(ca.Bytes(), cb.Bytes())
}

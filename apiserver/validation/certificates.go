package validation

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/validation/path"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubebus/kubebus/apiserver/pki"
)

var (
	csrConditionsPath  = field.NewPath("status", "conditions")
	csrCertificatePath = field.NewPath("status", "certificate")

	// validUsages are the key usages certificates.k8s.io/v1 knows.
	validUsages = sets.New(
		certificatesv1.UsageSigning, certificatesv1.UsageDigitalSignature, certificatesv1.UsageContentCommitment,
		certificatesv1.UsageKeyEncipherment, certificatesv1.UsageKeyAgreement, certificatesv1.UsageDataEncipherment,
		certificatesv1.UsageCertSign, certificatesv1.UsageCRLSign, certificatesv1.UsageEncipherOnly,
		certificatesv1.UsageDecipherOnly, certificatesv1.UsageAny, certificatesv1.UsageServerAuth,
		certificatesv1.UsageClientAuth, certificatesv1.UsageCodeSigning, certificatesv1.UsageEmailProtection,
		certificatesv1.UsageSMIME, certificatesv1.UsageIPsecEndSystem, certificatesv1.UsageIPsecTunnel,
		certificatesv1.UsageIPsecUser, certificatesv1.UsageTimestamping, certificatesv1.UsageOCSPSigning,
		certificatesv1.UsageMicrosoftSGC, certificatesv1.UsageNetscapeSGC,
	)

	// trueOnlyConditions may only have status True.
	trueOnlyConditions = []certificatesv1.RequestConditionType{
		certificatesv1.CertificateApproved, certificatesv1.CertificateDenied, certificatesv1.CertificateFailed,
	}
	allConditionStatuses = []corev1.ConditionStatus{corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown}
)

// legacyUnknownSigner is certificates.k8s.io/v1beta1's default signer,
// which v1 refuses.
const legacyUnknownSigner = "kubernetes.io/legacy-unknown"

// csrOptions are what an update path may change, and which problems
// already stored in the old object are tolerated, as upstream.
type csrOptions struct {
	settingApproval    bool // the approval subresource: Approved and Denied conditions
	settingCertificate bool // the status subresource: status.certificate

	bothApprovedAndDenied bool
	duplicateConditions   bool
	emptyConditionType    bool
	arbitraryCertificate  bool
	unknownUsages         bool
	duplicateUsages       bool
	legacySigner          bool
}

// csrTolerating returns the options of an update of old to csr (old nil
// for a create): bad data the stored object already holds stays accepted.
func csrTolerating(csr, old *certificatesv1.CertificateSigningRequest) csrOptions {
	if old == nil {
		return csrOptions{}
	}
	var o csrOptions
	seen := map[certificatesv1.RequestConditionType]bool{}
	for _, c := range old.Status.Conditions {
		o.duplicateConditions = o.duplicateConditions || seen[c.Type]
		o.emptyConditionType = o.emptyConditionType || c.Type == ""
		seen[c.Type] = true
	}
	o.bothApprovedAndDenied = seen[certificatesv1.CertificateApproved] && seen[certificatesv1.CertificateDenied]
	o.arbitraryCertificate = bytes.Equal(csr.Status.Certificate, old.Status.Certificate) || validateCertificatePEM(old.Status.Certificate) != nil
	usages := sets.New[certificatesv1.KeyUsage]()
	for _, u := range old.Spec.Usages {
		o.unknownUsages = o.unknownUsages || !validUsages.Has(u)
		o.duplicateUsages = o.duplicateUsages || usages.Has(u)
		usages.Insert(u)
	}
	o.legacySigner = old.Spec.SignerName == legacyUnknownSigner
	return o
}

// validateCSR validates a new CertificateSigningRequest: spec.request is a
// signed PEM CERTIFICATE REQUEST, spec.signerName a qualified name,
// spec.usages known ones without repetition, spec.expirationSeconds at
// least ten minutes, and the status (conditions, certificate) well formed.
func validateCSR(csr *certificatesv1.CertificateSigningRequest) field.ErrorList {
	return validateCSRWith(csr, csrOptions{})
}

// validateCSRUpdate validates an update through the main resource: it may
// not add, remove or change an Approved or Denied condition, nor set
// status.certificate, nor change the spec.
func validateCSRUpdate(csr, old *certificatesv1.CertificateSigningRequest) field.ErrorList {
	return validateCSRChange(csr, old, csrTolerating(csr, old))
}

// validateCSRStatusUpdate validates an update through the status
// subresource, the signer's: it may set status.certificate once.
func validateCSRStatusUpdate(csr, old *certificatesv1.CertificateSigningRequest) field.ErrorList {
	o := csrTolerating(csr, old)
	o.settingCertificate = true
	return validateCSRChange(csr, old, o)
}

// validateCSRApprovalUpdate validates an update through the approval
// subresource, the approver's: it may add or change Approved and Denied
// conditions.
func validateCSRApprovalUpdate(csr, old *certificatesv1.CertificateSigningRequest) field.ErrorList {
	o := csrTolerating(csr, old)
	o.settingApproval = true
	return validateCSRChange(csr, old, o)
}

func validateCSRWith(csr *certificatesv1.CertificateSigningRequest, o csrOptions) field.ErrorList {
	errs := validateMeta(&csr.ObjectMeta, false, path.ValidatePathSegmentName)
	if err := validateCSRRequest(csr.Spec.Request); err != nil {
		errs = append(errs, field.Invalid(specPath.Child("request"), csr.Spec.Request, err.Error()))
	}
	usagesPath := specPath.Child("usages")
	if len(csr.Spec.Usages) == 0 {
		errs = append(errs, field.Required(usagesPath, ""))
	}
	seen := sets.New[certificatesv1.KeyUsage]()
	for i, u := range csr.Spec.Usages {
		if !o.unknownUsages && !validUsages.Has(u) {
			errs = append(errs, field.NotSupported(usagesPath.Index(i), u, sets.List(validUsages)))
		}
		if !o.duplicateUsages && seen.Has(u) {
			errs = append(errs, field.Duplicate(usagesPath.Index(i), u))
		}
		seen.Insert(u)
	}
	signerPath := specPath.Child("signerName")
	if csr.Spec.SignerName == legacyUnknownSigner && !o.legacySigner {
		errs = append(errs, field.Invalid(signerPath, csr.Spec.SignerName, "the legacy signerName is not allowed via this API version"))
	} else {
		errs = append(errs, validateSignerName(csr.Spec.SignerName, signerPath)...)
	}
	if s := csr.Spec.ExpirationSeconds; s != nil && *s < 600 {
		errs = append(errs, field.Invalid(specPath.Child("expirationSeconds"), *s, "may not specify a duration less than 600 seconds (10 minutes)"))
	}
	errs = append(errs, validateCSRConditions(csr.Status.Conditions, o)...)
	if !o.arbitraryCertificate {
		if err := validateCertificatePEM(csr.Status.Certificate); err != nil {
			errs = append(errs, field.Invalid(csrCertificatePath, "<certificate data>", err.Error()))
		}
	}
	return errs
}

// validateCSRRequest checks that request is a PEM CERTIFICATE REQUEST
// whose signature verifies.
func validateCSRRequest(request []byte) error {
	req, err := pki.ParseCSR(request)
	if err != nil {
		return err
	}
	return req.CheckSignature()
}

// validateSignerName requires a qualified name "<domain>/<path>": the
// domain made of at least two DNS labels, the path of DNS subdomains.
func validateSignerName(name string, fldPath *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	domain, rest, ok := strings.Cut(name, "/")
	if !ok || strings.Contains(rest, "/") {
		return field.ErrorList{field.Invalid(fldPath, name, "must be a fully qualified domain and path of the form 'example.com/signer-name'")}
	}
	var errs field.ErrorList
	if len(domain) > validation.DNS1123SubdomainMaxLength {
		errs = append(errs, field.TooLong(fldPath, domain, validation.DNS1123SubdomainMaxLength))
	}
	labels := strings.Split(domain, ".")
	for _, l := range labels {
		if msgs := validation.IsDNS1123Label(l); len(msgs) > 0 {
			for _, m := range msgs {
				errs = append(errs, field.Invalid(fldPath, domain, fmt.Sprintf("validating label %q: %s", l, m)))
			}
			break
		}
	}
	if len(labels) < 2 {
		errs = append(errs, field.Invalid(fldPath, domain, "should be a domain with at least two segments separated by dots"))
	}
	if max := validation.DNS1123SubdomainMaxLength + validation.DNS1123LabelMaxLength + 1; len(rest) > max {
		errs = append(errs, field.TooLong(fldPath, rest, max))
	}
	for _, c := range strings.Split(rest, ".") {
		if msgs := validation.IsDNS1123Subdomain(c); len(msgs) > 0 {
			for _, m := range msgs {
				errs = append(errs, field.Invalid(fldPath, rest, fmt.Sprintf("validating component %q: %s", c, m)))
			}
			break
		}
	}
	return errs
}

// validateCSRConditions requires a type and a status on each condition,
// status True for Approved, Denied and Failed, one condition per type, and
// never both Approved and Denied.
func validateCSRConditions(conds []certificatesv1.CertificateSigningRequestCondition, o csrOptions) field.ErrorList {
	var errs field.ErrorList
	seen := map[certificatesv1.RequestConditionType]bool{}
	for i, c := range conds {
		p := csrConditionsPath.Index(i)
		if c.Type == "" && !o.emptyConditionType {
			errs = append(errs, field.Required(p.Child("type"), ""))
		}
		allowed := allConditionStatuses
		if slices.Contains(trueOnlyConditions, c.Type) {
			allowed = []corev1.ConditionStatus{corev1.ConditionTrue}
		}
		switch {
		case c.Status == "":
			errs = append(errs, field.Required(p.Child("status"), ""))
		case !slices.Contains(allowed, c.Status):
			errs = append(errs, field.NotSupported(p.Child("status"), c.Status, allowed))
		}
		if !o.bothApprovedAndDenied {
			if (c.Type == certificatesv1.CertificateApproved && seen[certificatesv1.CertificateDenied]) ||
				(c.Type == certificatesv1.CertificateDenied && seen[certificatesv1.CertificateApproved]) {
				errs = append(errs, field.Invalid(p.Child("type"), c.Type, "Approved and Denied conditions are mutually exclusive"))
			}
		}
		if seen[c.Type] && !o.duplicateConditions {
			errs = append(errs, field.Duplicate(p.Child("type"), c.Type))
		}
		seen[c.Type] = true
	}
	return errs
}

// validateCertificatePEM accepts an empty certificate or one or more PEM
// CERTIFICATE blocks without headers, each holding certificates.
func validateCertificatePEM(data []byte) error {
	if len(data) == 0 {
		return nil
	}
	blocks := 0
	for {
		block, rest := pem.Decode(data)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return fmt.Errorf("only CERTIFICATE PEM blocks are allowed, found %q", block.Type)
		}
		if len(block.Headers) != 0 {
			return errors.New("no PEM block headers are permitted")
		}
		certs, err := x509.ParseCertificates(block.Bytes)
		if err != nil {
			return err
		}
		if len(certs) == 0 {
			return errors.New("found CERTIFICATE PEM block containing 0 certificates")
		}
		blocks++
		data = rest
	}
	if blocks == 0 {
		return errors.New("must contain at least one CERTIFICATE PEM block")
	}
	return nil
}

// validateCSRChange validates csr replacing old on one of the update paths.
func validateCSRChange(csr, old *certificatesv1.CertificateSigningRequest, o csrOptions) field.ErrorList {
	errs := validateMetaUpdate(&csr.ObjectMeta, &old.ObjectMeta)
	errs = append(errs, validateCSRWith(csr, o)...)
	if !apiequality.Semantic.DeepEqual(csr.Spec, old.Spec) {
		errs = append(errs, field.Invalid(specPath, "<spec>", "field is immutable"))
	}
	for _, t := range trueOnlyConditions {
		if len(conditionsOf(csr, t)) < len(conditionsOf(old, t)) {
			errs = append(errs, field.Forbidden(csrConditionsPath, fmt.Sprintf("updates may not remove a condition of type %q", t)))
		}
	}
	if !o.settingApproval {
		for _, t := range []certificatesv1.RequestConditionType{certificatesv1.CertificateApproved, certificatesv1.CertificateDenied} {
			now, before := conditionsOf(csr, t), conditionsOf(old, t)
			switch {
			case len(now) < len(before):
				// reported above
			case len(now) > len(before):
				errs = append(errs, field.Forbidden(csrConditionsPath, fmt.Sprintf("updates may not add a condition of type %q", t)))
			case !apiequality.Semantic.DeepEqual(now, before):
				errs = append(errs, field.Forbidden(csrConditionsPath, fmt.Sprintf("updates may not modify a condition of type %q", t)))
			}
		}
	}
	if !bytes.Equal(csr.Status.Certificate, old.Status.Certificate) {
		switch {
		case !o.settingCertificate:
			errs = append(errs, field.Forbidden(csrCertificatePath, "updates may not set certificate content"))
		case len(old.Status.Certificate) > 0:
			errs = append(errs, field.Forbidden(csrCertificatePath, "updates may not modify existing certificate content"))
		}
	}
	return dedupe(errs)
}

// conditionsOf returns csr's conditions of type t.
func conditionsOf(csr *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) []certificatesv1.CertificateSigningRequestCondition {
	var out []certificatesv1.CertificateSigningRequestCondition
	for _, c := range csr.Status.Conditions {
		if c.Type == t {
			out = append(out, c)
		}
	}
	return out
}

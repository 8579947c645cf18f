package validation

import (
	"maps"
	"path"
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Validation of PersistentVolumes, PersistentVolumeClaims and
// StorageClasses, with upstream's rules and messages.

var (
	supportedAccessModes = []corev1.PersistentVolumeAccessMode{
		corev1.ReadOnlyMany, corev1.ReadWriteMany, corev1.ReadWriteOnce, corev1.ReadWriteOncePod,
	}
	supportedVolumeModes     = []corev1.PersistentVolumeMode{corev1.PersistentVolumeBlock, corev1.PersistentVolumeFilesystem}
	supportedPVReclaimPolicy = []corev1.PersistentVolumeReclaimPolicy{
		corev1.PersistentVolumeReclaimDelete, corev1.PersistentVolumeReclaimRecycle, corev1.PersistentVolumeReclaimRetain,
	}
	supportedSCReclaimPolicy = []corev1.PersistentVolumeReclaimPolicy{corev1.PersistentVolumeReclaimDelete, corev1.PersistentVolumeReclaimRetain}
	supportedBindingModes    = []storagev1.VolumeBindingMode{storagev1.VolumeBindingImmediate, storagev1.VolumeBindingWaitForFirstConsumer}
)

// persistentVolumeSourceNames holds the JSON name of each field of
// PersistentVolumeSource, in field order; every field is a pointer.
var persistentVolumeSourceNames = func() []string {
	t := reflect.TypeFor[corev1.PersistentVolumeSource]()
	names := make([]string, t.NumField())
	for i := range names {
		names[i], _, _ = strings.Cut(t.Field(i).Tag.Get("json"), ",")
	}
	return names
}()

// Limits on a StorageClass's parameters, as upstream.
const (
	maxProvisionerParameterLen  = 512
	maxProvisionerParameterSize = 256 * (1 << 10)
)

func validatePersistentVolume(pv *corev1.PersistentVolume) field.ErrorList {
	errs := validateMeta(&pv.ObjectMeta, false, apivalidation.NameIsDNSSubdomain)
	spec := &pv.Spec
	specPath := field.NewPath("spec")
	errs = append(errs, validateAccessModes(spec.AccessModes, specPath.Child("accessModes"), "")...)

	capPath := specPath.Child("capacity")
	if len(spec.Capacity) == 0 {
		errs = append(errs, field.Required(capPath, ""))
	}
	if _, ok := spec.Capacity[corev1.ResourceStorage]; !ok || len(spec.Capacity) > 1 {
		errs = append(errs, field.NotSupported(capPath, spec.Capacity, []corev1.ResourceName{corev1.ResourceStorage}))
	}
	for _, name := range sortedKeys(spec.Capacity) {
		errs = append(errs, validatePositiveQuantity(spec.Capacity[name], capPath.Key(string(name)))...)
	}
	if spec.StorageClassName != "" {
		errs = append(errs, validateDNSSubdomain(spec.StorageClassName, specPath.Child("storageClassName"))...)
	}
	if m := spec.VolumeMode; m != nil && !slices.Contains(supportedVolumeModes, *m) {
		errs = append(errs, field.NotSupported(specPath.Child("volumeMode"), *m, supportedVolumeModes))
	}
	if p := spec.PersistentVolumeReclaimPolicy; p != "" && !slices.Contains(supportedPVReclaimPolicy, p) {
		errs = append(errs, field.NotSupported(specPath.Child("persistentVolumeReclaimPolicy"), p, supportedPVReclaimPolicy))
	}
	if na := spec.NodeAffinity; na != nil {
		naPath := specPath.Child("nodeAffinity")
		if na.Required == nil {
			errs = append(errs, field.Required(naPath.Child("required"), "must specify required node constraints"))
		} else {
			errs = append(errs, validateNodeSelector(na.Required, naPath.Child("required"))...)
		}
	}
	errs = append(errs, validatePersistentVolumeSource(spec, specPath)...)
	if hp := spec.HostPath; hp != nil && path.Clean(hp.Path) == "/" && spec.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimRecycle {
		errs = append(errs, field.Forbidden(specPath.Child("persistentVolumeReclaimPolicy"), "may not be 'recycle' for a hostPath mount of '/'"))
	}
	if ref := spec.ClaimRef; ref != nil {
		if ref.Name == "" {
			errs = append(errs, field.Required(specPath.Child("claimRef", "name"), ""))
		}
		if ref.Namespace == "" {
			errs = append(errs, field.Required(specPath.Child("claimRef", "namespace"), ""))
		}
	}
	return errs
}

// validatePersistentVolumeSource requires exactly one source and checks the
// ones kubebus's nodes and provisioner use.
func validatePersistentVolumeSource(spec *corev1.PersistentVolumeSpec, specPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	fields := reflect.ValueOf(&spec.PersistentVolumeSource).Elem()
	n := 0
	for i, name := range persistentVolumeSourceNames {
		if fields.Field(i).IsNil() {
			continue
		}
		if n > 0 {
			errs = append(errs, field.Forbidden(specPath.Child(name), "may not specify more than 1 volume type"))
		}
		n++
	}
	if n == 0 {
		return append(errs, field.Required(specPath, "must specify a volume type"))
	}
	if s := spec.HostPath; s != nil {
		hp := specPath.Child("hostPath")
		if s.Path == "" {
			errs = append(errs, field.Required(hp.Child("path"), ""))
		} else {
			errs = append(errs, validatePathNoBacksteps(s.Path, hp.Child("path"))...)
		}
		if s.Type != nil && !slices.Contains(supportedHostPathTypes, *s.Type) {
			errs = append(errs, field.NotSupported(hp.Child("type"), *s.Type, supportedHostPathTypes))
		}
	}
	if s := spec.Local; s != nil {
		lp := specPath.Child("local")
		if s.Path == "" {
			errs = append(errs, field.Required(lp.Child("path"), ""))
		} else {
			errs = append(errs, validatePathNoBacksteps(s.Path, lp.Child("path"))...)
		}
		if spec.NodeAffinity == nil {
			errs = append(errs, field.Required(specPath.Child("nodeAffinity"), "Local volume requires node affinity"))
		}
	}
	if s := spec.NFS; s != nil {
		np := specPath.Child("nfs")
		if s.Server == "" {
			errs = append(errs, field.Required(np.Child("server"), ""))
		}
		if s.Path == "" {
			errs = append(errs, field.Required(np.Child("path"), ""))
		} else if !path.IsAbs(s.Path) {
			errs = append(errs, field.Invalid(np.Child("path"), s.Path, "must be an absolute path"))
		}
	}
	if s := spec.CSI; s != nil {
		cp := specPath.Child("csi")
		if s.Driver == "" {
			errs = append(errs, field.Required(cp.Child("driver"), ""))
		}
		if s.VolumeHandle == "" {
			errs = append(errs, field.Required(cp.Child("volumeHandle"), ""))
		}
	}
	return errs
}

// validatePersistentVolumeUpdate: the source, volume mode and a node
// affinity once set cannot change.
func validatePersistentVolumeUpdate(pv, old *corev1.PersistentVolume) field.ErrorList {
	errs := append(validateMetaUpdate(&pv.ObjectMeta, &old.ObjectMeta), validatePersistentVolume(pv)...)
	if !apiequality.Semantic.DeepEqual(pv.Spec.PersistentVolumeSource, old.Spec.PersistentVolumeSource) {
		d := diff.Diff(old.Spec.PersistentVolumeSource, pv.Spec.PersistentVolumeSource)
		errs = append(errs, field.Forbidden(field.NewPath("spec", "persistentvolumesource"), "spec.persistentvolumesource is immutable after creation\n"+d))
	}
	errs = append(errs, apivalidation.ValidateImmutableField(pv.Spec.VolumeMode, old.Spec.VolumeMode, field.NewPath("volumeMode"))...)
	if old.Spec.NodeAffinity != nil && !apiequality.Semantic.DeepEqual(pv.Spec.NodeAffinity, old.Spec.NodeAffinity) {
		errs = append(errs, field.Invalid(field.NewPath("nodeAffinity"), pv.Spec.NodeAffinity, "field is immutable"))
	}
	return errs
}

func validatePersistentVolumeClaim(pvc *corev1.PersistentVolumeClaim) field.ErrorList {
	errs := validateMeta(&pvc.ObjectMeta, true, apivalidation.NameIsDNSSubdomain)
	spec := &pvc.Spec
	specPath := field.NewPath("spec")
	errs = append(errs, validateAccessModes(spec.AccessModes, specPath.Child("accessModes"), "at least 1 access mode is required")...)
	if spec.Selector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(spec.Selector, labelSelectorValidation, specPath.Child("selector"))...)
	}
	storagePath := specPath.Child("resources").Key(string(corev1.ResourceStorage))
	if q, ok := spec.Resources.Requests[corev1.ResourceStorage]; !ok {
		errs = append(errs, field.Required(storagePath, ""))
	} else {
		errs = append(errs, validatePositiveQuantity(q, storagePath)...)
	}
	if c := spec.StorageClassName; c != nil && *c != "" {
		errs = append(errs, validateDNSSubdomain(*c, specPath.Child("storageClassName"))...)
	}
	if m := spec.VolumeMode; m != nil && !slices.Contains(supportedVolumeModes, *m) {
		errs = append(errs, field.NotSupported(specPath.Child("volumeMode"), *m, supportedVolumeModes))
	}
	return errs
}

// validatePersistentVolumeClaimUpdate: the spec is immutable except that
// the binder sets volumeName once, a claim without a class gets the default
// class, and a bound claim's storage request may grow.
func validatePersistentVolumeClaimUpdate(pvc, old *corev1.PersistentVolumeClaim) field.ErrorList {
	errs := append(validateMetaUpdate(&pvc.ObjectMeta, &old.ObjectMeta), validatePersistentVolumeClaim(pvc)...)
	newSpec, oldSpec := pvc.Spec.DeepCopy(), old.Spec.DeepCopy()
	if oldSpec.VolumeName == "" {
		newSpec.VolumeName = "" // set once, by the binder or the user
	}
	if _, beta := old.Annotations[corev1.BetaStorageClassAnnotation]; !beta && oldSpec.StorageClassName == nil &&
		newSpec.StorageClassName != nil && *newSpec.StorageClassName != "" {
		newSpec.StorageClassName = nil // a class-less claim gets the default class later
	}
	newSpec.VolumeAttributesClassName, oldSpec.VolumeAttributesClassName = nil, nil
	if old.Status.Phase == corev1.ClaimBound {
		newSize, oldSize := pvc.Spec.Resources.Requests[corev1.ResourceStorage], old.Spec.Resources.Requests[corev1.ResourceStorage]
		if newSpec.Resources.Requests != nil {
			newSpec.Resources.Requests[corev1.ResourceStorage] = oldSize
		}
		if newSize.Cmp(oldSize) < 0 {
			errs = append(errs, field.Forbidden(field.NewPath("spec", "resources", "requests", "storage"), "field can not be less than previous value"))
		}
	}
	if !apiequality.Semantic.DeepEqual(newSpec, oldSpec) {
		d := diff.Diff(oldSpec, newSpec)
		errs = append(errs, field.Forbidden(field.NewPath("spec"),
			"spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims\n"+d))
	}
	return errs
}

// validateAccessModes requires at least one supported mode, and
// ReadWriteOncePod alone. required is the message for none.
func validateAccessModes(modes []corev1.PersistentVolumeAccessMode, p *field.Path, required string) field.ErrorList {
	var errs field.ErrorList
	if len(modes) == 0 {
		errs = append(errs, field.Required(p, required))
	}
	rwop, other := false, false
	for _, m := range modes {
		switch {
		case !slices.Contains(supportedAccessModes, m):
			errs = append(errs, field.NotSupported(p, m, supportedAccessModes))
		case m == corev1.ReadWriteOncePod:
			rwop = true
		default:
			other = true
		}
	}
	if rwop && other {
		errs = append(errs, field.Forbidden(p, "may not use ReadWriteOncePod with other access modes"))
	}
	return errs
}

func validatePositiveQuantity(q resource.Quantity, p *field.Path) field.ErrorList {
	if q.Sign() <= 0 {
		return field.ErrorList{field.Invalid(p, q.String(), isNotPositiveMsg)}
	}
	return nil
}

func validateStorageClass(sc *storagev1.StorageClass) field.ErrorList {
	errs := validateMeta(&sc.ObjectMeta, false, apivalidation.NameIsDNSSubdomain)
	provPath := field.NewPath("provisioner")
	if sc.Provisioner == "" {
		errs = append(errs, field.Required(provPath, ""))
	} else {
		errs = append(errs, validateQualifiedName(strings.ToLower(sc.Provisioner), provPath)...)
	}
	errs = append(errs, validateStorageClassParameters(sc.Parameters, field.NewPath("parameters"))...)
	if p := sc.ReclaimPolicy; p != nil && *p != "" && !slices.Contains(supportedSCReclaimPolicy, *p) {
		errs = append(errs, field.NotSupported(field.NewPath("reclaimPolicy"), *p, supportedSCReclaimPolicy))
	}
	modePath := field.NewPath("volumeBindingMode")
	switch m := sc.VolumeBindingMode; {
	case m == nil:
		errs = append(errs, field.Required(modePath, ""))
	case !slices.Contains(supportedBindingModes, *m):
		errs = append(errs, field.NotSupported(modePath, *m, supportedBindingModes))
	}
	return errs
}

func validateStorageClassParameters(params map[string]string, p *field.Path) field.ErrorList {
	if len(params) > maxProvisionerParameterLen {
		return field.ErrorList{field.TooLong(p, "", maxProvisionerParameterLen)}
	}
	var errs field.ErrorList
	size := 0
	for _, k := range slices.Sorted(maps.Keys(params)) {
		if k == "" {
			errs = append(errs, field.Invalid(p, k, "field can not be empty."))
		}
		size += len(k) + len(params[k])
	}
	if size > maxProvisionerParameterSize {
		errs = append(errs, field.TooLong(p, "", maxProvisionerParameterSize))
	}
	return errs
}

// validateStorageClassUpdate: provisioner, parameters, reclaim policy and
// binding mode are fixed at creation.
func validateStorageClassUpdate(sc, old *storagev1.StorageClass) field.ErrorList {
	errs := append(validateMetaUpdate(&sc.ObjectMeta, &old.ObjectMeta), validateStorageClass(sc)...)
	if !reflect.DeepEqual(sc.Parameters, old.Parameters) {
		errs = append(errs, field.Forbidden(field.NewPath("parameters"), "updates to parameters are forbidden."))
	}
	if sc.Provisioner != old.Provisioner {
		errs = append(errs, field.Forbidden(field.NewPath("provisioner"), "updates to provisioner are forbidden."))
	}
	if !reflect.DeepEqual(sc.ReclaimPolicy, old.ReclaimPolicy) {
		errs = append(errs, field.Forbidden(field.NewPath("reclaimPolicy"), "updates to reclaimPolicy are forbidden."))
	}
	errs = append(errs, apivalidation.ValidateImmutableField(sc.VolumeBindingMode, old.VolumeBindingMode, field.NewPath("volumeBindingMode"))...)
	return errs
}

package validation

import (
	"path"
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const fileModeMsg = "must be a number between 0 and 0777 (octal), both inclusive"

var supportedHostPathTypes = []corev1.HostPathType{
	corev1.HostPathUnset, corev1.HostPathBlockDev, corev1.HostPathCharDev, corev1.HostPathDirectory,
	corev1.HostPathDirectoryOrCreate, corev1.HostPathFile, corev1.HostPathFileOrCreate, corev1.HostPathSocket,
}

// volumeSourceNames holds the JSON name of each field of VolumeSource, in
// field order. Every field is a pointer to one kind of source.
var volumeSourceNames = func() []string {
	t := reflect.TypeFor[corev1.VolumeSource]()
	names := make([]string, t.NumField())
	for i := range names {
		names[i], _, _ = strings.Cut(t.Field(i).Tag.Get("json"), ",")
	}
	return names
}()

// validateVolumes validates the volumes of a pod spec and returns the valid
// ones by name, for the volume mounts to refer to.
func validateVolumes(volumes []corev1.Volume, fldPath *field.Path) (map[string]corev1.VolumeSource, field.ErrorList) {
	var errs field.ErrorList
	valid := make(map[string]corev1.VolumeSource, len(volumes))
	for i := range volumes {
		v := &volumes[i]
		p := fldPath.Index(i)
		el := validateVolumeSource(&v.VolumeSource, p)
		if v.Name == "" {
			el = append(el, field.Required(p.Child("name"), ""))
		} else {
			el = append(el, validateDNSLabel(v.Name, p.Child("name"))...)
		}
		if _, dup := valid[v.Name]; dup {
			el = append(el, field.Duplicate(p.Child("name"), v.Name))
		}
		if len(el) > 0 {
			errs = append(errs, el...)
			continue
		}
		valid[v.Name] = v.VolumeSource
	}
	return valid, errs
}

// validateVolumeSource requires exactly one source and validates the
// common ones.
func validateVolumeSource(src *corev1.VolumeSource, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	fields := reflect.ValueOf(src).Elem()
	n := 0
	for i, name := range volumeSourceNames {
		if fields.Field(i).IsNil() {
			continue
		}
		if n > 0 {
			errs = append(errs, field.Forbidden(p.Child(name), "may not specify more than 1 volume type"))
		}
		n++
	}
	if n == 0 {
		return field.ErrorList{field.Required(p, "must specify a volume type")}
	}

	if s := src.EmptyDir; s != nil && s.SizeLimit != nil && s.SizeLimit.Sign() < 0 {
		errs = append(errs, field.Forbidden(p.Child("emptyDir", "sizeLimit"), "SizeLimit field must be a valid resource quantity"))
	}
	if s := src.HostPath; s != nil {
		hp := p.Child("hostPath")
		if s.Path == "" {
			errs = append(errs, field.Required(hp.Child("path"), ""))
		} else {
			errs = append(errs, validatePathNoBacksteps(s.Path, hp.Child("path"))...)
		}
		if s.Type != nil && !slices.Contains(supportedHostPathTypes, *s.Type) {
			errs = append(errs, field.NotSupported(hp.Child("type"), *s.Type, supportedHostPathTypes))
		}
	}
	if s := src.Secret; s != nil {
		sp := p.Child("secret")
		if s.SecretName == "" {
			errs = append(errs, field.Required(sp.Child("secretName"), ""))
		}
		errs = append(errs, validateFileMode(s.DefaultMode, sp.Child("defaultMode"))...)
		errs = append(errs, validateKeysToPaths(s.Items, sp.Child("items"))...)
	}
	if s := src.ConfigMap; s != nil {
		cp := p.Child("configMap")
		if s.Name == "" {
			errs = append(errs, field.Required(cp.Child("name"), ""))
		}
		errs = append(errs, validateFileMode(s.DefaultMode, cp.Child("defaultMode"))...)
		errs = append(errs, validateKeysToPaths(s.Items, cp.Child("items"))...)
	}
	if s := src.PersistentVolumeClaim; s != nil && s.ClaimName == "" {
		errs = append(errs, field.Required(p.Child("persistentVolumeClaim", "claimName"), ""))
	}
	if s := src.NFS; s != nil {
		np := p.Child("nfs")
		if s.Server == "" {
			errs = append(errs, field.Required(np.Child("server"), ""))
		}
		if s.Path == "" {
			errs = append(errs, field.Required(np.Child("path"), ""))
		} else if !path.IsAbs(s.Path) {
			errs = append(errs, field.Invalid(np.Child("path"), s.Path, "must be an absolute path"))
		}
	}
	if s := src.DownwardAPI; s != nil {
		dp := p.Child("downwardAPI")
		errs = append(errs, validateFileMode(s.DefaultMode, dp.Child("defaultMode"))...)
		for i := range s.Items {
			errs = append(errs, validateDownwardAPIFile(&s.Items[i], dp.Child("items").Index(i))...)
		}
	}
	if s := src.Projected; s != nil {
		errs = append(errs, validateProjected(s, p.Child("projected"))...)
	}
	if s := src.CSI; s != nil && s.Driver == "" {
		errs = append(errs, field.Required(p.Child("csi", "driver"), ""))
	}
	if s := src.Ephemeral; s != nil && s.VolumeClaimTemplate == nil {
		errs = append(errs, field.Required(p.Child("ephemeral", "volumeClaimTemplate"), ""))
	}
	if s := src.Image; s != nil {
		ip := p.Child("image")
		if s.Reference == "" {
			errs = append(errs, field.Required(ip.Child("reference"), ""))
		}
		if s.PullPolicy != "" && !slices.Contains(supportedPullPolicies, s.PullPolicy) {
			errs = append(errs, field.NotSupported(ip.Child("pullPolicy"), s.PullPolicy, supportedPullPolicies))
		}
	}
	return errs
}

func validateFileMode(mode *int32, p *field.Path) field.ErrorList {
	if mode != nil && (*mode < 0 || *mode > 0o777) {
		return field.ErrorList{field.Invalid(p, *mode, fileModeMsg)}
	}
	return nil
}

func validateKeysToPaths(items []corev1.KeyToPath, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, kp := range items {
		ip := p.Index(i)
		if kp.Key == "" {
			errs = append(errs, field.Required(ip.Child("key"), ""))
		}
		if kp.Path == "" {
			errs = append(errs, field.Required(ip.Child("path"), ""))
		}
		errs = append(errs, validateLocalNonReservedPath(kp.Path, ip.Child("path"))...)
		errs = append(errs, validateFileMode(kp.Mode, ip.Child("mode"))...)
	}
	return errs
}

// validateLocalNonReservedPath requires a relative path below its base that
// does not start with "..", which the kubelet reserves for its own files.
func validateLocalNonReservedPath(p string, fldPath *field.Path) field.ErrorList {
	errs := validateLocalDescendingPath(p, fldPath)
	if strings.HasPrefix(p, "..") {
		errs = append(errs, field.Invalid(fldPath, p, "must not start with '..'"))
	}
	return errs
}

func validateDownwardAPIFile(f *corev1.DownwardAPIVolumeFile, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if f.Path == "" {
		errs = append(errs, field.Required(p.Child("path"), ""))
	}
	errs = append(errs, validateLocalNonReservedPath(f.Path, p.Child("path"))...)
	switch {
	case f.FieldRef != nil && f.ResourceFieldRef != nil:
		errs = append(errs, field.Invalid(p, "resource", "fieldRef and resourceFieldRef can not be specified simultaneously"))
	case f.FieldRef != nil:
		errs = append(errs, validateFieldSelector(f.FieldRef, volumeFieldPaths, p.Child("fieldRef"))...)
	case f.ResourceFieldRef != nil:
		errs = append(errs, validateResourceFieldSelector(f.ResourceFieldRef, true, p.Child("resourceFieldRef"))...)
	default:
		errs = append(errs, field.Required(p, "one of fieldRef and resourceFieldRef is required"))
	}
	return append(errs, validateFileMode(f.Mode, p.Child("mode"))...)
}

// validateProjected checks a projected volume: one source per entry and no
// two files at the same path.
func validateProjected(s *corev1.ProjectedVolumeSource, p *field.Path) field.ErrorList {
	errs := validateFileMode(s.DefaultMode, p.Child("defaultMode"))
	paths := map[string]bool{}
	addPath := func(file string, at *field.Path) {
		if file == "" {
			return
		}
		if paths[file] {
			errs = append(errs, field.Invalid(at, file, "conflicting duplicate paths"))
		}
		paths[file] = true
	}
	for i, src := range s.Sources {
		sp := p.Child("sources").Index(i)
		n := 0
		if c := src.Secret; c != nil {
			n++
			if c.Name == "" {
				errs = append(errs, field.Required(sp.Child("secret", "name"), ""))
			}
			errs = append(errs, validateKeysToPaths(c.Items, sp.Child("secret", "items"))...)
			for j, kp := range c.Items {
				addPath(kp.Path, sp.Child("secret", "items").Index(j).Child("path"))
			}
		}
		if c := src.ConfigMap; c != nil {
			n++
			if c.Name == "" {
				errs = append(errs, field.Required(sp.Child("configMap", "name"), ""))
			}
			errs = append(errs, validateKeysToPaths(c.Items, sp.Child("configMap", "items"))...)
			for j, kp := range c.Items {
				addPath(kp.Path, sp.Child("configMap", "items").Index(j).Child("path"))
			}
		}
		if c := src.DownwardAPI; c != nil {
			n++
			for j := range c.Items {
				ip := sp.Child("downwardAPI", "items").Index(j)
				errs = append(errs, validateDownwardAPIFile(&c.Items[j], ip)...)
				addPath(c.Items[j].Path, ip.Child("path"))
			}
		}
		if t := src.ServiceAccountToken; t != nil {
			n++
			tp := sp.Child("serviceAccountToken")
			if t.ExpirationSeconds != nil {
				switch e := *t.ExpirationSeconds; {
				case e < 10*60:
					errs = append(errs, field.Invalid(tp.Child("expirationSeconds"), e, "may not specify a duration less than 10 minutes"))
				case e > 1<<32:
					errs = append(errs, field.Invalid(tp.Child("expirationSeconds"), e, "may not specify a duration larger than 2^32 seconds"))
				}
			}
			if t.Path == "" {
				errs = append(errs, field.Required(tp.Child("path"), ""))
			}
			errs = append(errs, validateLocalNonReservedPath(t.Path, tp.Child("path"))...)
			addPath(t.Path, tp.Child("path"))
		}
		if src.ClusterTrustBundle != nil {
			n++
		}
		if src.PodCertificate != nil {
			n++
		}
		switch {
		case n == 0:
			errs = append(errs, field.Required(sp, "must specify a volume projection"))
		case n > 1:
			errs = append(errs, field.Forbidden(sp, "may not specify more than 1 volume type per source"))
		}
	}
	return errs
}

package validation

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The pod fields the downward API exposes, to environment variables and to
// volume files. Labels and annotations may also be read one key at a time
// with a subscript: metadata.labels['app'].
var (
	envFieldPaths = []string{
		"metadata.name", "metadata.namespace", "metadata.uid",
		"spec.nodeName", "spec.serviceAccountName",
		"status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs",
	}
	volumeFieldPaths = []string{
		"metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid",
	}
	resourceFieldPaths = []string{
		"limits.cpu", "limits.ephemeral-storage", "limits.memory",
		"requests.cpu", "requests.ephemeral-storage", "requests.memory",
	}
)

func validateEnv(vars []corev1.EnvVar, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, ev := range vars {
		p := path.Index(i)
		if ev.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		} else {
			errs = append(errs, messages(p.Child("name"), ev.Name, validation.IsRelaxedEnvVarName(ev.Name))...)
		}
		errs = append(errs, validateEnvVarSource(ev, p.Child("valueFrom"))...)
	}
	return errs
}

// validateEnvVarSource requires exactly one source in valueFrom, and no
// value beside it.
func validateEnvVarSource(ev corev1.EnvVar, path *field.Path) field.ErrorList {
	from := ev.ValueFrom
	if from == nil {
		return nil
	}
	var errs field.ErrorList
	sources := 0
	if from.FieldRef != nil {
		sources++
		errs = append(errs, validateFieldSelector(from.FieldRef, envFieldPaths, path.Child("fieldRef"))...)
	}
	if from.ResourceFieldRef != nil {
		sources++
		errs = append(errs, validateResourceFieldSelector(from.ResourceFieldRef, false, path.Child("resourceFieldRef"))...)
	}
	if s := from.ConfigMapKeyRef; s != nil {
		sources++
		errs = append(errs, validateKeySelector(s.Name, s.Key, path.Child("configMapKeyRef"))...)
	}
	if s := from.SecretKeyRef; s != nil {
		sources++
		errs = append(errs, validateKeySelector(s.Name, s.Key, path.Child("secretKeyRef"))...)
	}
	if s := from.FileKeyRef; s != nil {
		sources++
		errs = append(errs, validateFileKeySelector(s, path.Child("fileKeyRef"))...)
	}
	switch {
	case sources == 0:
		errs = append(errs, field.Invalid(path, "", "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef`, `secretKeyRef` or `fileKeyRef`"))
	case ev.Value != "":
		errs = append(errs, field.Invalid(path, "", "may not be specified when `value` is not empty"))
	case sources > 1:
		errs = append(errs, field.Invalid(path, "", "may not have more than one field specified at a time"))
	}
	return errs
}

// validateFieldSelector checks a downward API field reference against the
// fields allowed where it is used.
func validateFieldSelector(fs *corev1.ObjectFieldSelector, allowed []string, path *field.Path) field.ErrorList {
	if fs.APIVersion == "" {
		return field.ErrorList{field.Required(path.Child("apiVersion"), "")}
	}
	if fs.FieldPath == "" {
		return field.ErrorList{field.Required(path.Child("fieldPath"), "")}
	}
	if fs.APIVersion != "v1" {
		return field.ErrorList{field.Invalid(path.Child("fieldPath"), fs.FieldPath,
			fmt.Sprintf("error converting fieldPath: unsupported pod version: %s", fs.APIVersion))}
	}
	if base, key, ok := splitSubscript(fs.FieldPath); ok {
		switch base {
		case "metadata.annotations":
			return validateQualifiedName(strings.ToLower(key), path)
		case "metadata.labels":
			return validateQualifiedName(key, path)
		}
		return field.ErrorList{field.Invalid(path, base, "does not support subscript")}
	}
	if !slices.Contains(allowed, fs.FieldPath) {
		return field.ErrorList{field.NotSupported(path.Child("fieldPath"), fs.FieldPath, allowed)}
	}
	return nil
}

// splitSubscript splits "metadata.labels['app']" into its field and key.
func splitSubscript(p string) (base, key string, ok bool) {
	i := strings.Index(p, "['")
	if i < 0 || !strings.HasSuffix(p, "']") || i+2 > len(p)-2 {
		return "", "", false
	}
	return p[:i], p[i+2 : len(p)-2], true
}

// validateResourceFieldSelector checks a reference to a container's
// requests or limits; a volume file must name its container.
func validateResourceFieldSelector(rs *corev1.ResourceFieldSelector, inVolume bool, path *field.Path) field.ErrorList {
	switch {
	case inVolume && rs.ContainerName == "":
		return field.ErrorList{field.Required(path.Child("containerName"), "")}
	case rs.Resource == "":
		return field.ErrorList{field.Required(path.Child("resource"), "")}
	case slices.Contains(resourceFieldPaths, rs.Resource),
		strings.HasPrefix(rs.Resource, "requests.hugepages-"),
		strings.HasPrefix(rs.Resource, "limits.hugepages-"):
		return nil
	}
	return field.ErrorList{field.NotSupported(path.Child("resource"), rs.Resource, resourceFieldPaths)}
}

// validateKeySelector checks a reference to one key of a ConfigMap or a
// Secret.
func validateKeySelector(name, key string, path *field.Path) field.ErrorList {
	errs := messages(path.Child("name"), name, apivalidation.NameIsDNSSubdomain(name, false))
	if key == "" {
		return append(errs, field.Required(path.Child("key"), ""))
	}
	return append(errs, messages(path.Child("key"), key, validation.IsConfigMapKey(key))...)
}

func validateFileKeySelector(s *corev1.FileKeySelector, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.VolumeName == "" {
		errs = append(errs, field.Required(path.Child("volumeName"), ""))
	} else {
		errs = append(errs, validateDNSLabel(s.VolumeName, path.Child("volumeName"))...)
	}
	if s.Path == "" {
		errs = append(errs, field.Required(path.Child("path"), ""))
	} else {
		errs = append(errs, validateLocalDescendingPath(s.Path, path.Child("path"))...)
	}
	if s.Key == "" {
		errs = append(errs, field.Required(path.Child("key"), ""))
	}
	return errs
}

// validateEnvFrom requires exactly one of configMapRef and secretRef in each
// source.
func validateEnvFrom(sources []corev1.EnvFromSource, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, src := range sources {
		p := path.Index(i)
		if src.Prefix != "" {
			errs = append(errs, messages(p.Child("prefix"), src.Prefix, validation.IsRelaxedEnvVarName(src.Prefix))...)
		}
		n := 0
		if src.ConfigMapRef != nil {
			n++
			errs = append(errs, validateRefName(src.ConfigMapRef.Name, p.Child("configMapRef", "name"))...)
		}
		if src.SecretRef != nil {
			n++
			errs = append(errs, validateRefName(src.SecretRef.Name, p.Child("secretRef", "name"))...)
		}
		switch {
		case n == 0:
			errs = append(errs, field.Invalid(path, "", "must specify one of: `configMapRef` or `secretRef`"))
		case n > 1:
			errs = append(errs, field.Invalid(path, "", "may not have more than one field specified at a time"))
		}
	}
	return errs
}

// validateRefName requires the name of a referenced ConfigMap or Secret.
func validateRefName(name string, path *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(path, "")}
	}
	return messages(path, name, apivalidation.NameIsDNSSubdomain(name, true))
}

package defaults

import (
	"regexp"

	corev1 "k8s.io/api/core/v1"
)

// The grammar of an image reference, as container runtimes parse it:
// [domain/]path[:tag][@digest], where only the domain may use upper case.
const (
	domainComponent = `(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])`
	domainPart      = domainComponent + `(?:\.` + domainComponent + `)*(?::[0-9]+)?`
	pathComponent   = `[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*`
	tagPart         = `[\w][\w.-]{0,127}`
	digestPart      = `[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}`
)

var imageRef = regexp.MustCompile(`^(?:` + domainPart + `/)?` + pathComponent + `(?:/` + pathComponent + `)*` +
	`(?::(` + tagPart + `))?(?:@(` + digestPart + `))?$`)

// pullPolicy returns the pull policy an image gets by default: Always when it
// names the "latest" tag, explicitly or by naming no tag and no digest, and
// IfNotPresent otherwise (including references that do not parse, which
// validation reports).
func pullPolicy(image string) corev1.PullPolicy {
	tag, digest, ok := imageTag(image)
	if ok && (tag == "latest" || tag == "" && digest == "") {
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}

// imageTag splits the tag and digest off a reference; ok is false when the
// reference is malformed.
func imageTag(image string) (tag, digest string, ok bool) {
	m := imageRef.FindStringSubmatch(image)
	if m == nil {
		return "", "", false
	}
	return m[1], m[2], true
}

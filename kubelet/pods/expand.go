package pods

import "strings"

// Expand replaces the $(NAME) references in s the way Kubernetes expands
// command, args and env values: a reference to a name lookup knows
// becomes its value; an unknown one stays as written; $$ is an escaped $
// (so $$(NAME) yields the literal $(NAME)); a $ not followed by ( or $,
// and an unterminated $(, stay as they are.
func Expand(s string, lookup func(name string) (string, bool)) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString("$(")
				i++
				continue
			}
			name := s[i+2 : i+2+end]
			if v, ok := lookup(name); ok {
				b.WriteString(v)
			} else {
				b.WriteString("$(" + name + ")")
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

// mapLookup returns a lookup over maps, the first that has a name winning.
func mapLookup(ms ...map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		for _, m := range ms {
			if v, ok := m[name]; ok {
				return v, true
			}
		}
		return "", false
	}
}

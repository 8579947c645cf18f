package auth

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// LoadTokenFile reads a static token file in upstream's format: one
// `token,user,uid[,"group1,group2"]` line each (the uid may be empty).
func LoadTokenFile(path string) (Tokens, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening token file: %w", err)
	}
	defer f.Close()
	return ParseTokens(f)
}

// ParseTokens parses the token file format.
func ParseTokens(r io.Reader) (Tokens, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.Comment = '#'
	out := Tokens{}
	for line := 1; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("token file line %d: %w", line, err)
		}
		if len(rec) < 3 || rec[0] == "" || rec[1] == "" {
			return nil, fmt.Errorf("token file line %d: want token,user,uid[,groups]", line)
		}
		u := User{Name: rec[1], UID: rec[2]}
		if len(rec) > 3 && rec[3] != "" {
			for _, g := range strings.Split(rec[3], ",") {
				u.Groups = append(u.Groups, strings.TrimSpace(g))
			}
		}
		if _, dup := out[rec[0]]; dup {
			return nil, fmt.Errorf("token file line %d: duplicate token", line)
		}
		out[rec[0]] = u
	}
}

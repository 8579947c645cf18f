package auth

import (
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

func TestParseTokensAndAuthenticate(t *testing.T) {
	toks, err := ParseTokens(strings.NewReader("# comment\nsecret1,alice,1001,\"dev,ops\"\nsecret2,bob,1002\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		header  string
		user    string
		groups  []string
		ok, bad bool
	}{
		{"Bearer secret1", "alice", []string{"dev", "ops"}, true, false},
		{"Bearer secret2", "bob", nil, true, false},
		{"bearer secret2", "bob", nil, true, false},
		{"Bearer nope", "", nil, false, true},
		{"", "", nil, false, false},
		{"Basic abc", "", nil, false, false},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		if tc.header != "" {
			r.Header.Set("Authorization", tc.header)
		}
		u, ok, err := Bearer{Tokens: AudienceAgnostic{Tokens: toks}}.Authenticate(r)
		if ok != tc.ok || (err != nil) != tc.bad || u.Name != tc.user || !slices.Equal(u.Groups, tc.groups) {
			t.Errorf("%q: got %+v ok=%v err=%v", tc.header, u, ok, err)
		}
	}
	for _, bad := range []string{"onlytoken\n", "t,u\n", ",u,1\n", "t,u,1\nt,v,2\n"} {
		if _, err := ParseTokens(strings.NewReader(bad)); err == nil {
			t.Errorf("ParseTokens(%q) accepted a bad file", bad)
		}
	}
}

// TestParseTokensUID checks the third column is the user's UID, as
// upstream's token file.
func TestParseTokensUID(t *testing.T) {
	toks, err := ParseTokens(strings.NewReader("secret1,alice,1001,\"dev,ops\"\nsecret2,bob,\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := toks["secret1"]; got.Name != "alice" || got.UID != "1001" {
		t.Errorf("secret1 = %+v, want alice with UID 1001", got)
	}
	if got := toks["secret2"]; got.Name != "bob" || got.UID != "" {
		t.Errorf("secret2 = %+v, want bob without a UID", got)
	}
}

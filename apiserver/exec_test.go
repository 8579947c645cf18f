package apiserver

import (
	"net/url"
	"strings"
	"testing"

	"github.com/kubebus/kubebus/apiserver/resource"
)

func TestParseStreamOptions(t *testing.T) {
	for _, tc := range []struct {
		sub     resource.Subresource
		query   string
		want    string // the kubelet URL's path and query
		wantErr string
	}{
		{resource.Exec, "command=sh&command=-c&command=echo+hi&container=c&stdout=true&stderr=1", "/exec/ns/p/c?command=sh&command=-c&command=echo+hi&error=1&output=1", ""},
		{resource.Exec, "command=sh&container=c&stdin=true&stdout=true&tty=true&stderr=true", "/exec/ns/p/c?command=sh&input=1&output=1&tty=1", ""},
		{resource.Exec, "container=c&stdout=true", "", "at least 1 command"},
		{resource.Exec, "command=sh&container=c", "", "at least 1 of stdin, stdout, stderr"},
		{resource.Attach, "container=c&stdout=true&stdin=false", "/attach/ns/p/c?output=1", ""},
		{resource.Attach, "container=c", "", "at least 1 of stdin, stdout, stderr"},
		{resource.PortForward, "ports=8080&ports=80", "/portForward/ns/p?port=8080&port=80", ""},
		{resource.PortForward, "", "/portForward/ns/p", ""},
		{resource.PortForward, "ports=0", "", "invalid port"},
		{resource.PortForward, "ports=70000", "", "invalid port"},
	} {
		q, _ := url.ParseQuery(tc.query)
		o, err := parseStreamOptions(tc.sub, q)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s?%s: err %v, want %q", tc.sub, tc.query, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s?%s: %v", tc.sub, tc.query, err)
			continue
		}
		u := kubeletStreamURL("10.0.0.1:10250", "ns", "p", o)
		if u.Scheme != "https" || u.Host != "10.0.0.1:10250" || u.RequestURI() != tc.want {
			t.Errorf("%s?%s: kubelet URL %s, want https://10.0.0.1:10250%s", tc.sub, tc.query, u, tc.want)
		}
	}
}

func TestIsStreamSubresource(t *testing.T) {
	for sub, want := range map[string]bool{"exec": true, "attach": true, "portforward": true, "log": false, "": false, "status": false} {
		if isStreamSubresource(sub) != want {
			t.Errorf("isStreamSubresource(%q) = %v", sub, !want)
		}
		if want && !longRunning(RequestInfo{Verb: "create", Subresource: sub}) {
			t.Errorf("%s is not long-running", sub)
		}
	}
}

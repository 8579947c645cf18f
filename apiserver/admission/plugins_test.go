package admission

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/apiserver/auth"
)

func TestResolve(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name            string
		enable, disable []string
		want            []string
		wantErr         []string // substrings of the error
	}{
		{name: "defaults", want: DefaultPlugins()},
		{name: "enabling a default changes nothing", enable: []string{"NodeRestriction"}, want: DefaultPlugins()},
		{name: "disable two", disable: []string{"PodSecurity", "ResourceQuota"},
			want: []string{"NamespaceLifecycle", "LimitRanger", "ServiceAccount", "NodeRestriction", "Priority", "DefaultTolerationSeconds",
				"DefaultStorageClass", "StorageObjectInUseProtection"}},
		{name: "unknown names", enable: []string{"AlwaysPullImages"}, disable: []string{"Nope"}, wantErr: []string{
			`enable-admission-plugins plugin "AlwaysPullImages" is unknown (known plugins: NamespaceLifecycle, LimitRanger, ServiceAccount, NodeRestriction, PodSecurity, Priority, DefaultTolerationSeconds, DefaultStorageClass, StorageObjectInUseProtection, ResourceQuota)`,
			`disable-admission-plugins plugin "Nope" is unknown`,
		}},
		{name: "enabled and disabled", enable: []string{"Priority", "LimitRanger"}, disable: []string{"Priority", "LimitRanger"},
			wantErr: []string{"[LimitRanger Priority] in enable-admission-plugins and disable-admission-plugins overlapped"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := Resolve(tc.enable, tc.disable)
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("Resolve = %v, want an error", got)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not say %q", err, w)
					}
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Resolve = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

// namedAdmitter is a plugin built by a factory, known by its name.
type namedAdmitter string

func (namedAdmitter) Admit(_ context.Context, _ *auth.AdmissionRequest) error { return nil }

func TestBuild(t *testing.T) {
	t.Parallel()
	factories := map[string]func() (auth.Admitter, error){
		PluginLimitRanger:   func() (auth.Admitter, error) { return namedAdmitter("LimitRanger"), nil },
		PluginResourceQuota: func() (auth.Admitter, error) { return namedAdmitter("ResourceQuota"), nil },
	}
	deps := Deps{Namespaces: namespaceMap{}, ServiceAccounts: &accountMap{}, Pods: podMap{}, Factories: factories}
	tests := []struct {
		name    string
		names   []string
		deps    Deps
		want    Chain
		wantErr string
	}{
		{name: "validating plugins run last",
			names: []string{PluginNamespaceLifecycle, PluginLimitRanger, PluginServiceAccount, PluginNodeRestriction, PluginPriority, PluginDefaultTolerationSeconds, PluginResourceQuota},
			deps:  deps,
			want: Chain{&NamespaceLifecycle{Namespaces: namespaceMap{}}, namedAdmitter("LimitRanger"), ServiceAccount{Accounts: &accountMap{}},
				NodeRestriction{Pods: podMap{}}, Priority{}, DefaultTolerationSeconds{}, namedAdmitter("ResourceQuota")}},
		{name: "the given order is kept within a phase",
			names: []string{PluginResourceQuota, PluginDefaultTolerationSeconds, PluginPriority},
			deps:  deps,
			want:  Chain{DefaultTolerationSeconds{}, Priority{}, namedAdmitter("ResourceQuota")}},
		{name: "a factory replaces a built-in plugin",
			names: []string{PluginDefaultTolerationSeconds},
			deps: Deps{Factories: map[string]func() (auth.Admitter, error){
				PluginDefaultTolerationSeconds: func() (auth.Admitter, error) { return DefaultTolerationSeconds{NotReady: i64(5)}, nil },
			}},
			want: Chain{DefaultTolerationSeconds{NotReady: i64(5)}}},
		{name: "none", deps: deps, want: Chain{}},
		{name: "missing getter", names: []string{PluginServiceAccount},
			wantErr: "admission: building plugin ServiceAccount: no ServiceAccountGetter"},
		{name: "PodSecurity without namespaces", names: []string{PluginPodSecurity},
			wantErr: "admission: building plugin PodSecurity: admission: PodSecurity needs a NamespaceGetter"},
		{name: "missing factory", names: []string{PluginLimitRanger},
			wantErr: "admission: building plugin LimitRanger: no such plugin here and none in Deps.Factories"},
		{name: "factory error", names: []string{PluginResourceQuota},
			deps: Deps{Factories: map[string]func() (auth.Admitter, error){
				PluginResourceQuota: func() (auth.Admitter, error) { return nil, errors.New("no quota store") },
			}},
			wantErr: "admission: building plugin ResourceQuota: no quota store"},
		{name: "listed twice", names: []string{PluginPriority, PluginPriority},
			wantErr: "admission: plugin Priority is listed twice"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := Build(tc.names, tc.deps)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("Build error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("Build = %#v, want %#v", got, tc.want)
			}
			for i := range got {
				if reflect.TypeOf(got[i]) != reflect.TypeOf(tc.want[i]) || (reflect.TypeOf(got[i]).Comparable() && !reflect.DeepEqual(got[i], tc.want[i])) {
					t.Errorf("plugin %d = %#v, want %#v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestForbidRequestNamesTheObject(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		req  *auth.AdmissionRequest
		msg  string
	}{
		{name: "attributes name", req: &auth.AdmissionRequest{Attributes: auth.Attributes{Resource: "pods", Name: "p"}},
			msg: `pods "p" is forbidden: no`},
		{name: "object name", req: &auth.AdmissionRequest{Attributes: auth.Attributes{APIGroup: "apps", Resource: "deployments"},
			Object: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "d"}}}, msg: `deployments.apps "d" is forbidden: no`},
		{name: "generate name", req: &auth.AdmissionRequest{Attributes: auth.Attributes{Resource: "pods"},
			Object: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "web-"}}}, msg: `pods "web-" is forbidden: no`},
		{name: "unknown", req: &auth.AdmissionRequest{Attributes: auth.Attributes{Resource: "pods"}},
			msg: `pods "Unknown" is forbidden: no`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			expectStatus(t, forbidRequest(tc.req, errors.New("no")), http.StatusForbidden, tc.msg)
		})
	}
}

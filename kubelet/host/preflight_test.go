package host

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubebus/kubebus/kubelet/cni"
)

func TestPreflight(t *testing.T) {
	t.Parallel()
	plugins := t.TempDir()
	for _, p := range cni.Plugins {
		if err := os.WriteFile(filepath.Join(plugins, p), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	path := func(have ...string) func(string) (string, error) {
		return func(name string) (string, error) {
			for _, h := range have {
				if h == name {
					return "/usr/bin/" + name, nil
				}
			}
			return "", errors.New("not found")
		}
	}
	root := func() int { return 0 }
	for _, tc := range []struct {
		name string
		cfg  PreflightConfig
		want string // in the error; "" for none
	}{
		{"all there", PreflightConfig{OwnContainerd: true, CNIPluginDirs: []string{plugins}, LookPath: path("containerd", "runc"), EUID: root}, ""},
		{"not root", PreflightConfig{CNIPluginDirs: []string{plugins}, LookPath: path("containerd", "runc"), EUID: func() int { return 1000 }}, "needs root"},
		{"no containerd", PreflightConfig{OwnContainerd: true, CNIPluginDirs: []string{plugins}, LookPath: path("runc"), EUID: root}, "apt-get install containerd"},
		{"external containerd needs none here", PreflightConfig{CNIPluginDirs: []string{plugins}, LookPath: path("runc"), EUID: root}, ""},
		{"no runc", PreflightConfig{CNIPluginDirs: []string{plugins}, LookPath: path("containerd"), EUID: root}, "runc is not on PATH"},
		{"no CNI plugins", PreflightConfig{CNIPluginDirs: []string{t.TempDir()}, LookPath: path("containerd", "runc"), EUID: root}, `"bridge"`},
		{"no namespace", PreflightConfig{CNIPluginDirs: []string{plugins}, NetNS: filepath.Join(t.TempDir(), "ns"), LookPath: path("runc"), EUID: root}, "not a network namespace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Preflight(tc.cfg)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Preflight: %v, want nil", err)
			case tc.want != "" && (!errors.Is(err, ErrPreflight) || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Preflight: %v, want ErrPreflight mentioning %q", err, tc.want)
			}
		})
	}
}

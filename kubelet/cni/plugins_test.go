package cni

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckPlugins(t *testing.T) {
	t.Parallel()
	full, partial, empty := t.TempDir(), t.TempDir(), t.TempDir()
	for _, p := range Plugins {
		if err := os.WriteFile(filepath.Join(full, p), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		if p != "portmap" {
			if err := os.WriteFile(filepath.Join(partial, p), []byte("#!/bin/sh\n"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, tc := range []struct {
		name    string
		dirs    []string
		missing string
	}{
		{"all present", []string{full}, ""},
		{"found in a later directory", []string{empty, full}, ""},
		{"empty directory", []string{empty}, `"bridge"`},
		{"one missing", []string{partial}, `"portmap"`},
		{"split over two directories", []string{partial, filepath.Join(full)}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckPlugins(tc.dirs)
			if tc.missing == "" {
				if err != nil {
					t.Fatalf("CheckPlugins(%v) = %v, want nil", tc.dirs, err)
				}
				return
			}
			if !errors.Is(err, ErrPluginMissing) || !strings.Contains(err.Error(), tc.missing) {
				t.Fatalf("CheckPlugins(%v) = %v, want ErrPluginMissing naming %s", tc.dirs, err, tc.missing)
			}
		})
	}
}

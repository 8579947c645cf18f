package crd

import (
	"slices"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/kubebus/kubebus/apiserver/resource"
)

func TestAcceptNames(t *testing.T) {
	other := func(group, plural, kind string, short ...string) *apiextensionsv1.CustomResourceDefinition {
		c := &apiextensionsv1.CustomResourceDefinition{}
		c.Name = plural + "." + group
		c.Spec.Group = group
		c.Status.AcceptedNames = apiextensionsv1.CustomResourceDefinitionNames{
			Plural: plural, Singular: plural[:len(plural)-1], Kind: kind, ListKind: kind + "List", ShortNames: short,
		}
		return c
	}
	builtinRows := resource.Builtin()
	tests := []struct {
		name     string
		mutate   func(c *apiextensionsv1.CustomResourceDefinition)
		others   []*apiextensionsv1.CustomResourceDefinition
		builtin  []*resource.Resource
		status   apiextensionsv1.ConditionStatus
		reason   string
		message  string
		accepted string // the plural accepted
	}{
		{name: "no conflicts", status: apiextensionsv1.ConditionTrue, reason: "NoConflicts", message: "no conflicts found", accepted: "crontabs",
			others: []*apiextensionsv1.CustomResourceDefinition{other("other.example.com", "crontabs", "CronTab")}, builtin: builtinRows},
		{name: "same plural in group", others: []*apiextensionsv1.CustomResourceDefinition{other("stable.example.com", "others", "Other", "crontabs")},
			status: apiextensionsv1.ConditionFalse, reason: "PluralConflict", message: `"crontabs" is already in use`},
		{name: "same singular in group", others: []*apiextensionsv1.CustomResourceDefinition{other("stable.example.com", "crontabs", "Other")},
			status: apiextensionsv1.ConditionFalse, reason: "SingularConflict", message: `"crontab" is already in use`},
		{name: "same kind in group", others: []*apiextensionsv1.CustomResourceDefinition{other("stable.example.com", "others", "CronTab")},
			status: apiextensionsv1.ConditionFalse, reason: "KindConflict", message: `"CronTab" is already in use`, accepted: "crontabs",
			mutate: func(c *apiextensionsv1.CustomResourceDefinition) { c.Spec.Names.ListKind = "CronTabItems" }},
		{name: "short name", others: []*apiextensionsv1.CustomResourceDefinition{other("stable.example.com", "others", "Other", "ct")},
			status: apiextensionsv1.ConditionFalse, reason: "ShortNamesConflict", message: `"ct" is already in use`, accepted: "crontabs"},
		{name: "list kind", others: []*apiextensionsv1.CustomResourceDefinition{other("stable.example.com", "others", "CronTabList")},
			status: apiextensionsv1.ConditionFalse, reason: "ListKindConflict", message: `"CronTabList" is already in use`, accepted: "crontabs"},
		{name: "crd itself among others", others: []*apiextensionsv1.CustomResourceDefinition{other("stable.example.com", "crontabs", "CronTab", "ct")},
			mutate: func(c *apiextensionsv1.CustomResourceDefinition) {
				c.Status.AcceptedNames = c.Spec.Names
			},
			status: apiextensionsv1.ConditionTrue, reason: "NoConflicts", accepted: "crontabs"},
		{name: "built-in plural", builtin: builtinRows,
			mutate: func(c *apiextensionsv1.CustomResourceDefinition) {
				c.Spec.Group = "apps"
				c.Spec.Names = apiextensionsv1.CustomResourceDefinitionNames{Plural: "deployments", Singular: "mydeployment", Kind: "MyDeployment", ListKind: "MyDeploymentList"}
			},
			status: apiextensionsv1.ConditionFalse, reason: "PluralConflict", message: `"deployments" is already in use`},
		{name: "already accepted stays", others: []*apiextensionsv1.CustomResourceDefinition{other("stable.example.com", "crontabs", "Other")},
			mutate: func(c *apiextensionsv1.CustomResourceDefinition) {
				c.Status.AcceptedNames = c.Spec.Names
			},
			status: apiextensionsv1.ConditionTrue, reason: "NoConflicts", accepted: "crontabs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cronTab(t)
			if tt.mutate != nil {
				tt.mutate(c)
			}
			names, cond := AcceptNames(c, tt.others, tt.builtin)
			if cond.Type != apiextensionsv1.NamesAccepted || cond.Status != tt.status || cond.Reason != tt.reason {
				t.Fatalf("condition %+v, want %s %s", cond, tt.status, tt.reason)
			}
			if tt.message != "" && cond.Message != tt.message {
				t.Fatalf("message %q, want %q", cond.Message, tt.message)
			}
			if names.Plural != tt.accepted {
				t.Fatalf("accepted plural %q, want %q", names.Plural, tt.accepted)
			}
			if tt.status == apiextensionsv1.ConditionTrue && !slices.Equal(names.ShortNames, c.Spec.Names.ShortNames) {
				t.Fatalf("short names %v", names.ShortNames)
			}
		})
	}
}

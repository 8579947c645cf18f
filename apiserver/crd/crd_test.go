package crd

import (
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestRowValidate(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(c *apiextensionsv1.CustomResourceDefinition)
		wantErr string // a field path in the errors; "" for none
	}{
		{name: "valid"},
		{name: "bad group", mutate: func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Group = "nodots"
			c.Name = "crontabs.nodots"
		}, wantErr: "spec.group"},
		{name: "name not plural.group", mutate: func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Name = "other.stable.example.com"
		}, wantErr: "metadata.name"},
		{name: "non-structural schema", mutate: func(c *apiextensionsv1.CustomResourceDefinition) {
			for i := range c.Spec.Versions {
				spec := c.Spec.Versions[i].Schema.OpenAPIV3Schema.Properties["spec"]
				spec.Type = ""
				c.Spec.Versions[i].Schema.OpenAPIV3Schema.Properties["spec"] = spec
			}
		}, wantErr: "openAPIV3Schema.properties[spec].type"},
	}
	row := Row()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cronTab(t)
			if tt.mutate != nil {
				tt.mutate(c)
			}
			row.Default(c)
			row.PrepareForCreate(c)
			errs := row.Validate(c)
			if tt.wantErr == "" {
				if len(errs) > 0 {
					t.Fatalf("unexpected errors: %v", errs)
				}
				return
			}
			if !strings.Contains(errs.ToAggregate().Error(), tt.wantErr) {
				t.Fatalf("errors %v do not mention %q", errs, tt.wantErr)
			}
		})
	}
}

func TestRowUpdate(t *testing.T) {
	row := Row()
	old := cronTab(t)
	old.ResourceVersion = "7"
	row.PrepareForCreate(old)
	if got := old.Status.StoredVersions; len(got) != 1 || got[0] != "v1" {
		t.Fatalf("storedVersions = %v, want [v1]", got)
	}
	tests := []struct {
		name    string
		mutate  func(c *apiextensionsv1.CustomResourceDefinition)
		wantErr string
	}{
		{name: "add category", mutate: func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Names.Categories = append(c.Spec.Names.Categories, "more")
		}},
		{name: "change group", mutate: func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Group = "other.example.com"
		}, wantErr: "spec.group"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := old.DeepCopy()
			c.Status = apiextensionsv1.CustomResourceDefinitionStatus{}
			tt.mutate(c)
			row.PrepareForUpdate(c, old)
			errs := row.ValidateUpdate(c, old)
			if tt.wantErr == "" && len(errs) > 0 {
				t.Fatalf("unexpected errors: %v", errs)
			}
			if tt.wantErr != "" && !strings.Contains(errs.ToAggregate().Error(), tt.wantErr) {
				t.Fatalf("errors %v do not mention %q", errs, tt.wantErr)
			}
		})
	}
}

func TestRowStatusAndCells(t *testing.T) {
	row := Row()
	old := cronTab(t)
	old.ResourceVersion = "7"
	row.PrepareForCreate(old)
	c := old.DeepCopy()
	SetCondition(c, apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue, Reason: "InitialNamesAccepted"})
	c.Status.AcceptedNames = c.Spec.Names
	if errs := row.ValidateSubresource(c, old, "status"); len(errs) > 0 {
		t.Fatalf("status update: %v", errs)
	}
	bad := c.DeepCopy()
	bad.Status.AcceptedNames.Plural = "Not_Valid"
	if errs := row.ValidateSubresource(bad, old, "status"); len(errs) == 0 {
		t.Fatal("status with an invalid accepted plural accepted")
	}

	c.CreationTimestamp = metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	cells, err := row.Cells(c, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if cells[0] != "crontabs.stable.example.com" || cells[1] != "2026-01-02T03:04:05Z" {
		t.Fatalf("cells = %v", cells)
	}
	if len(row.Columns) != 2 {
		t.Fatalf("columns = %v", row.Columns)
	}
}

func TestSetCondition(t *testing.T) {
	c := cronTab(t)
	SetCondition(c, apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionFalse, Reason: "A"})
	first := c.Status.Conditions[0].LastTransitionTime
	past := metav1.NewTime(first.Add(-time.Hour))
	c.Status.Conditions[0].LastTransitionTime = past
	SetCondition(c, apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionFalse, Reason: "B"})
	if len(c.Status.Conditions) != 1 || c.Status.Conditions[0].Reason != "B" || !c.Status.Conditions[0].LastTransitionTime.Equal(&past) {
		t.Fatalf("same status: %+v", c.Status.Conditions)
	}
	SetCondition(c, apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue, Reason: "C"})
	if c.Status.Conditions[0].LastTransitionTime.Equal(&past) {
		t.Fatal("LastTransitionTime kept across a status change")
	}
}

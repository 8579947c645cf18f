package deployment

import (
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestNewRSTarget(t *testing.T) {
	t.Parallel()
	d := mkDeployment(10, "img:2") // maxSurge 2, maxUnavailable 1
	tests := []struct {
		name string
		d    *appsv1.Deployment
		old  []*appsv1.ReplicaSet
		new  *appsv1.ReplicaSet
		want int32
	}{
		{"fresh", d, nil, mkRS(d, "n", "img:2", "1", 0, status(0, 0)), 10},
		{"surge over a full old one", d, []*appsv1.ReplicaSet{mkRS(d, "o", "img:1", "1", 10)}, mkRS(d, "n", "img:2", "2", 0, status(0, 0)), 2},
		{"old pods not gone yet count", d, []*appsv1.ReplicaSet{mkRS(d, "o", "img:1", "1", 9, status(10, 10))}, mkRS(d, "n", "img:2", "2", 2), 2},
		{"room after the old one shrank", d, []*appsv1.ReplicaSet{mkRS(d, "o", "img:1", "1", 7)}, mkRS(d, "n", "img:2", "2", 2), 5},
		{"never beyond replicas", d, []*appsv1.ReplicaSet{mkRS(d, "o", "img:1", "1", 0)}, mkRS(d, "n", "img:2", "2", 8), 10},
		{"too big shrinks", d, nil, mkRS(d, "n", "img:2", "2", 12), 10},
		{"recreate takes all at once", mkDeployment(10, "img:2", recreate), []*appsv1.ReplicaSet{mkRS(d, "o", "img:1", "1", 10)}, mkRS(d, "n", "img:2", "2", 0), 10},
	}
	for _, tt := range tests {
		all := withNew(tt.old, tt.new)
		if got := newRSTarget(tt.d, all, tt.new); got != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, got, tt.want)
		}
	}
}

func sizes(rz []resize) map[string]int32 {
	out := map[string]int32{}
	for _, r := range rz {
		out[r.rs.Name] = r.to
	}
	return out
}

func TestScaleDownOld(t *testing.T) {
	t.Parallel()
	d := mkDeployment(10, "img:2") // minAvailable 9
	tests := []struct {
		name string
		new  *appsv1.ReplicaSet
		old  []*appsv1.ReplicaSet
		want map[string]int32
	}{
		{"new pods not available yet: keep 9", mkRS(d, "n", "img:2", "2", 2, status(2, 0)),
			[]*appsv1.ReplicaSet{mkRS(d, "o", "img:1", "1", 10)}, map[string]int32{"o": 9}},
		{"new pods available", mkRS(d, "n", "img:2", "2", 2),
			[]*appsv1.ReplicaSet{mkRS(d, "o", "img:1", "1", 10)}, map[string]int32{"o": 7}},
		{"unhealthy old pods go first, oldest first", mkRS(d, "n", "img:2", "2", 2, status(2, 0)),
			[]*appsv1.ReplicaSet{mkRS(d, "b", "img:0", "2", 5, createdAt(time.Minute)), mkRS(d, "a", "img:1", "1", 5, status(5, 2))}, map[string]int32{"a": 4}},
		{"a stale status does not count pods being removed", mkRS(d, "n", "img:2", "2", 3, status(3, 1)),
			[]*appsv1.ReplicaSet{mkRS(d, "o", "img:1", "1", 9, status(10, 10))}, map[string]int32{"o": 8}},
		{"at the floor: nothing", mkRS(d, "n", "img:2", "2", 3, status(3, 0)),
			[]*appsv1.ReplicaSet{mkRS(d, "o", "img:1", "1", 9)}, map[string]int32{}},
		{"no old replicas", mkRS(d, "n", "img:2", "2", 10), []*appsv1.ReplicaSet{mkRS(d, "o", "img:1", "1", 0)}, map[string]int32{}},
		{"several old: oldest first", mkRS(d, "n", "img:3", "3", 4),
			[]*appsv1.ReplicaSet{mkRS(d, "b", "img:2", "2", 4, createdAt(time.Minute)), mkRS(d, "a", "img:1", "1", 4)}, map[string]int32{"a": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := sizes(scaleDownOld(d, tt.new, tt.old))
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("got %v, want %v", got, tt.want)
				}
			}
		})
	}
}

func TestPlanScale(t *testing.T) {
	t.Parallel()
	pct := intstr.FromString
	d20 := mkDeployment(20, "img:2", surgeUnavail(pct("25%"), pct("25%"))) // surge 5
	d10 := mkDeployment(10, "img:2", surgeUnavail(pct("25%"), pct("25%"))) // surge 3
	d0 := mkDeployment(0, "img:2")
	tests := []struct {
		name string
		d    *appsv1.Deployment
		new  *appsv1.ReplicaSet
		old  []*appsv1.ReplicaSet
		want map[string]int32
	}{
		{"one active takes all", d20, mkRS(d20, "n", "img:2", "2", 10), []*appsv1.ReplicaSet{mkRS(d20, "o", "img:1", "1", 0)}, map[string]int32{"n": 20}},
		{"none active: the new one", d20, mkRS(d20, "n", "img:2", "2", 0), nil, map[string]int32{"n": 20}},
		{"none active, no new one: the newest old", d20, nil, []*appsv1.ReplicaSet{
			mkRS(d20, "a", "img:0", "1", 0), mkRS(d20, "b", "img:1", "2", 0, createdAt(time.Minute)),
		}, map[string]int32{"b": 20}},
		{"saturated new one: old ones to 0", d20, mkRS(d20, "n", "img:2", "2", 20, annotate(DesiredReplicasAnnotation, "20")),
			[]*appsv1.ReplicaSet{mkRS(d20, "o", "img:1", "1", 3)}, map[string]int32{"o": 0}},
		{"proportional up 10 to 20", d20, mkRS(d20, "n", "img:2", "2", 5, annotate(MaxReplicasAnnotation, "13")),
			[]*appsv1.ReplicaSet{mkRS(d20, "o", "img:1", "1", 8, annotate(MaxReplicasAnnotation, "13"))}, map[string]int32{"o": 15, "n": 10}},
		{"proportional down 20 to 10", d10, mkRS(d10, "n", "img:2", "2", 10, annotate(MaxReplicasAnnotation, "25")),
			[]*appsv1.ReplicaSet{mkRS(d10, "o", "img:1", "1", 15, annotate(MaxReplicasAnnotation, "25"))}, map[string]int32{"o": 8, "n": 5}},
		{"small sets", d20, mkRS(d20, "n", "img:2", "2", 1, annotate(MaxReplicasAnnotation, "3")),
			[]*appsv1.ReplicaSet{mkRS(d20, "o", "img:1", "1", 2, annotate(MaxReplicasAnnotation, "3"))}, map[string]int32{"o": 17, "n": 8}},
		{"no base to scale from: all to the largest", d20, mkRS(d20, "n", "img:2", "2", 1),
			[]*appsv1.ReplicaSet{mkRS(d20, "o", "img:1", "1", 2)}, map[string]int32{"o": 24, "n": 1}},
		{"to zero", d0, mkRS(d0, "n", "img:2", "2", 2), []*appsv1.ReplicaSet{mkRS(d0, "o", "img:1", "1", 3)}, map[string]int32{"o": 0, "n": 0}},
		{"recreate with two active: nothing", mkDeployment(5, "img:2", recreate), mkRS(d20, "n", "img:2", "2", 2),
			[]*appsv1.ReplicaSet{mkRS(d20, "o", "img:1", "1", 3)}, map[string]int32{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := sizes(planScale(tt.d, tt.new, tt.old))
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("got %v, want %v", got, tt.want)
				}
			}
		})
	}
}

func TestIsScalingEvent(t *testing.T) {
	t.Parallel()
	d := mkDeployment(5, "img:2")
	tests := []struct {
		name string
		rss  []*appsv1.ReplicaSet
		want bool
	}{
		{"sized for 5", []*appsv1.ReplicaSet{mkRS(d, "n", "img:2", "1", 5, annotate(DesiredReplicasAnnotation, "5"))}, false},
		{"sized for 3", []*appsv1.ReplicaSet{mkRS(d, "n", "img:2", "1", 3, annotate(DesiredReplicasAnnotation, "3"))}, true},
		{"inactive ones do not count", []*appsv1.ReplicaSet{mkRS(d, "n", "img:2", "1", 0, annotate(DesiredReplicasAnnotation, "3"))}, false},
		{"no annotation", []*appsv1.ReplicaSet{mkRS(d, "n", "img:2", "1", 3)}, false},
	}
	for _, tt := range tests {
		newRS, old := splitReplicaSets(d, tt.rss)
		if got := isScalingEvent(d, newRS, old); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestCleanupCandidates(t *testing.T) {
	t.Parallel()
	d := mkDeployment(3, "img:9")
	two := int32(2)
	d.Spec.RevisionHistoryLimit = &two
	busy := mkRS(d, "busy", "img:2", "2", 1)
	unobserved := mkRS(d, "unobserved", "img:3", "3", 0, status(0, 0), func(rs *appsv1.ReplicaSet) { rs.Generation = 2 })
	old := []*appsv1.ReplicaSet{
		mkRS(d, "r5", "img:5", "5", 0, status(0, 0)), mkRS(d, "r1", "img:1", "1", 0, status(0, 0)),
		mkRS(d, "r4", "img:4", "4", 0, status(0, 0)), busy, unobserved,
	}
	got := names(cleanupCandidates(d, old))
	if !slices.Equal(got, []string{"r1"}) {
		t.Errorf("got %v, want r1 (busy and unobserved are kept, r4 and r5 are within the limit)", got)
	}
	d.Spec.RevisionHistoryLimit = nil
	if got := cleanupCandidates(d, old); len(got) != 0 {
		t.Errorf("no limit: got %v", names(got))
	}
}

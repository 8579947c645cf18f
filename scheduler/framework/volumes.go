package framework

import (
	"sort"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/component-helpers/storage/volume"
)

// storageObjects are the PersistentVolumeClaims, PersistentVolumes and
// StorageClasses a Snapshot holds for volume binding, with the claims a
// reservation assumed (the selected-node annotation written in the cache
// before it is written through the API).
type storageObjects struct {
	claims  map[string]*v1.PersistentVolumeClaim // namespace/name
	assumed map[string]*v1.PersistentVolumeClaim // namespace/name
	volumes map[string]*v1.PersistentVolume
	classes map[string]*storagev1.StorageClass
}

func (s *Snapshot) storageObjects() *storageObjects {
	if s.storage == nil {
		s.storage = &storageObjects{
			claims: map[string]*v1.PersistentVolumeClaim{}, assumed: map[string]*v1.PersistentVolumeClaim{},
			volumes: map[string]*v1.PersistentVolume{}, classes: map[string]*storagev1.StorageClass{},
		}
	}
	return s.storage
}

func claimKey(namespace, name string) string { return namespace + "/" + name }

// SetClaim records a claim from the informer. A newer version (another
// resourceVersion) than an assumed one replaces the assumption.
func (s *Snapshot) SetClaim(c *v1.PersistentVolumeClaim) {
	st := s.storageObjects()
	key := claimKey(c.Namespace, c.Name)
	st.claims[key] = c
	if a, ok := st.assumed[key]; ok && a.ResourceVersion != c.ResourceVersion {
		delete(st.assumed, key)
	}
}

// RemoveClaim forgets a claim and any assumption of it.
func (s *Snapshot) RemoveClaim(namespace, name string) {
	st := s.storageObjects()
	delete(st.claims, claimKey(namespace, name))
	delete(st.assumed, claimKey(namespace, name))
}

// Claim returns a claim: the assumed version if there is one.
func (s *Snapshot) Claim(namespace, name string) (*v1.PersistentVolumeClaim, bool) {
	st := s.storageObjects()
	key := claimKey(namespace, name)
	if c, ok := st.assumed[key]; ok {
		return c, true
	}
	c, ok := st.claims[key]
	return c, ok
}

// AssumeClaim makes c (a modified copy of a claim the snapshot holds) what
// Claim returns until the informer delivers a newer version or
// ForgetAssumedClaim undoes it.
func (s *Snapshot) AssumeClaim(c *v1.PersistentVolumeClaim) {
	s.storageObjects().assumed[claimKey(c.Namespace, c.Name)] = c
}

// ForgetAssumedClaim drops the assumption of a claim.
func (s *Snapshot) ForgetAssumedClaim(namespace, name string) {
	delete(s.storageObjects().assumed, claimKey(namespace, name))
}

// SetVolume records a PersistentVolume.
func (s *Snapshot) SetVolume(pv *v1.PersistentVolume) { s.storageObjects().volumes[pv.Name] = pv }

// RemoveVolume forgets a PersistentVolume.
func (s *Snapshot) RemoveVolume(name string) { delete(s.storageObjects().volumes, name) }

// Volume returns a PersistentVolume.
func (s *Snapshot) Volume(name string) (*v1.PersistentVolume, bool) {
	pv, ok := s.storageObjects().volumes[name]
	return pv, ok
}

// SetStorageClass records a StorageClass.
func (s *Snapshot) SetStorageClass(sc *storagev1.StorageClass) {
	s.storageObjects().classes[sc.Name] = sc
}

// RemoveStorageClass forgets a StorageClass.
func (s *Snapshot) RemoveStorageClass(name string) { delete(s.storageObjects().classes, name) }

// StorageClass returns a StorageClass.
func (s *Snapshot) StorageClass(name string) (*storagev1.StorageClass, bool) {
	sc, ok := s.storageObjects().classes[name]
	return sc, ok
}

// VolumesOfClass returns the PersistentVolumes of a StorageClass ("" for
// none), sorted by name.
func (s *Snapshot) VolumesOfClass(class string) []*v1.PersistentVolume {
	var out []*v1.PersistentVolume
	for _, pv := range s.storageObjects().volumes {
		if volume.GetPersistentVolumeClass(pv) == class {
			out = append(out, pv)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

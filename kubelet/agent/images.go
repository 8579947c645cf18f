package agent

import (
	"context"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubebus/kubebus/kubelet/runtime"
)

// maxNodeImages is how many images the node status lists, as upstream.
const maxNodeImages = 50

// NodeImages is the node status' image list: the largest images first.
func NodeImages(images []runtime.Image) []corev1.ContainerImage {
	sorted := slices.Clone(images)
	slices.SortStableFunc(sorted, func(a, b runtime.Image) int {
		switch {
		case a.Size > b.Size:
			return -1
		case a.Size < b.Size:
			return 1
		}
		return 0
	})
	var out []corev1.ContainerImage
	for _, img := range sorted {
		if len(out) == maxNodeImages {
			break
		}
		names := slices.Clone(img.RepoTags)
		if img.ID != "" {
			names = append(names, img.ID)
		}
		if len(names) == 0 {
			continue
		}
		out = append(out, corev1.ContainerImage{Names: names, SizeBytes: img.Size})
	}
	return out
}

// ImagesToFree picks the images to remove when the image filesystem is
// above the high threshold (percent used): least recently used first,
// never an image in use, until the use would be at the low threshold.
// lastUsed overrides an image's own LastUsedAt when later.
func ImagesToFree(images []runtime.Image, inUse map[string]bool, lastUsed map[string]time.Time, fs runtime.FsInfo, high, low int) []runtime.Image {
	if fs.CapacityBytes == 0 {
		return nil
	}
	usedPct := int(fs.Used * 100 / fs.CapacityBytes)
	if usedPct < high {
		return nil
	}
	target := fs.CapacityBytes * uint64(low) / 100
	if fs.Used <= target {
		return nil
	}
	toFree := int64(fs.Used - target)
	used := func(img runtime.Image) time.Time {
		t := img.LastUsedAt
		if l, ok := lastUsed[img.ID]; ok && l.After(t) {
			t = l
		}
		return t
	}
	var candidates []runtime.Image
	for _, img := range images {
		if !inUse[img.ID] {
			candidates = append(candidates, img)
		}
	}
	slices.SortStableFunc(candidates, func(a, b runtime.Image) int { return used(a).Compare(used(b)) })
	var out []runtime.Image
	for _, img := range candidates {
		if toFree <= 0 {
			break
		}
		out = append(out, img)
		toFree -= img.Size
	}
	return out
}

func (k *Kubelet) imageGC(ctx context.Context) {
	fs, err := k.rt.ImageFsInfo(ctx)
	if err != nil {
		k.log.Warn("image GC: reading the image filesystem", "err", err)
		return
	}
	images, err := k.rt.ListImages(ctx)
	if err != nil {
		k.log.Warn("image GC: listing images", "err", err)
		return
	}
	cs, err := k.rt.ListContainers(ctx)
	if err != nil {
		k.log.Warn("image GC: listing containers", "err", err)
		return
	}
	inUse := map[string]bool{}
	for _, c := range cs {
		inUse[c.ImageID] = true
	}
	k.mu.Lock()
	lastUsed := make(map[string]time.Time, len(k.lastUsed))
	for id, t := range k.lastUsed {
		lastUsed[id] = t
	}
	k.mu.Unlock()
	for _, img := range ImagesToFree(images, inUse, lastUsed, fs, k.cfg.ImageGCHighThreshold, k.cfg.ImageGCLowThreshold) {
		ref := img.ID
		if len(img.RepoTags) > 0 {
			ref = img.RepoTags[0]
		}
		if err := k.rt.RemoveImage(ctx, ref); err != nil {
			k.log.Warn("image GC: removing an image", "image", ref, "err", err)
			continue
		}
		k.log.Info("image GC: removed an image", "image", ref, "size", img.Size)
	}
}

// Images lists the runtime's images for the node status.
func (k *Kubelet) Images(ctx context.Context) []corev1.ContainerImage {
	images, err := k.rt.ListImages(ctx)
	if err != nil {
		return nil
	}
	return NodeImages(images)
}

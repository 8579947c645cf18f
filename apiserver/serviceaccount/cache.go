package serviceaccount

import (
	"crypto/sha256"
	"encoding/binary"
	"time"

	"k8s.io/apimachinery/pkg/util/cache"

	"github.com/kubebus/kubebus/apiserver/auth"
)

// tokenCache remembers verified tokens for a short TTL, as upstream's
// cached token authenticator, so a busy client does not cost a signature
// check and lookups per request. Keys are hashes of the token and the
// audiences asked for, never the token. Failures are not remembered.
type tokenCache struct {
	lru *cache.LRUExpireCache
	ttl time.Duration
}

type cacheKey [sha256.Size]byte

type cachedResult struct {
	user      auth.User
	audiences []string
}

type clockFunc func() time.Time

func (f clockFunc) Now() time.Time { return f() }

func newTokenCache(size int, ttl time.Duration, now func() time.Time) *tokenCache {
	return &tokenCache{lru: cache.NewLRUExpireCacheWithClock(size, clockFunc(now)), ttl: ttl}
}

// newCacheKey hashes the audiences, each with its length, then the token.
func newCacheKey(token string, audiences []string) cacheKey {
	h := sha256.New()
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(audiences)))
	h.Write(n[:])
	for _, a := range audiences {
		binary.BigEndian.PutUint64(n[:], uint64(len(a)))
		h.Write(n[:])
		h.Write([]byte(a))
	}
	h.Write([]byte(token))
	var k cacheKey
	h.Sum(k[:0])
	return k
}

func (c *tokenCache) get(k cacheKey) (cachedResult, bool) {
	v, ok := c.lru.Get(k)
	if !ok {
		return cachedResult{}, false
	}
	return v.(cachedResult), true
}

// add remembers r for the cache's TTL, or until the token expires if that
// is sooner.
func (c *tokenCache) add(k cacheKey, r cachedResult, untilExpiry time.Duration) {
	ttl := min(c.ttl, untilExpiry)
	if ttl <= 0 {
		return
	}
	c.lru.Add(k, r, ttl)
}

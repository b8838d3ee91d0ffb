package pull

import (
	"container/list"
	"fmt"
	"sync"

	"github.com/wheelmq/wheelmq/actors/wirecode"
)

// DefaultFilterCacheSize is the number of compiled subscriptions a
// FilterCache keeps.
const DefaultFilterCacheSize = 1024

// FilterCache compiles each subscription once: it maps (expression type,
// expression, subscription version) to the compiled Filter, or to the error
// compiling it gave (so a bad expression is not recompiled on every pull).
// It keeps the most recently used entries up to its size. Safe for
// concurrent use: the router calls it from the network event loops.
type FilterCache struct {
	mu      sync.Mutex
	size    int
	entries map[filterKey]*list.Element // guarded by mu
	lru     list.List                   // of *filterEntry, most recent first; guarded by mu
}

type filterKey struct {
	exprType, expr string
	version        int64
}

type filterEntry struct {
	key    filterKey
	filter Filter
	err    error
}

// NewFilterCache returns a cache of up to size entries (<= 0: the default).
func NewFilterCache(size int) *FilterCache {
	if size <= 0 {
		size = DefaultFilterCacheSize
	}
	return &FilterCache{size: size, entries: map[filterKey]*list.Element{}}
}

// Get returns the compiled filter of a subscription (see CompileFilter),
// compiling it on first use. version is the subscription's subVersion: a
// consumer that re-subscribes gets a new entry even for the same text.
func (c *FilterCache) Get(exprType, expr string, version int64) (Filter, error) {
	k := filterKey{exprType, expr, version}
	c.mu.Lock()
	if el, ok := c.entries[k]; ok {
		c.lru.MoveToFront(el)
		e := el.Value.(*filterEntry)
		c.mu.Unlock()
		return e.filter, e.err
	}
	c.mu.Unlock()
	// Compile outside the lock; a concurrent miss compiles twice, harmlessly.
	f, err := CompileFilter(exprType, expr)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[k]; !ok {
		c.entries[k] = c.lru.PushFront(&filterEntry{key: k, filter: f, err: err})
		for c.lru.Len() > c.size {
			old := c.lru.Back()
			c.lru.Remove(old)
			delete(c.entries, old.Value.(*filterEntry).key)
		}
	}
	return f, err
}

// Len is the number of cached entries.
func (c *FilterCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}

// Check answers whether a subscription compiles, which HEART_BEAT and
// CHECK_CLIENT_CONFIG (46) must tell the client: wirecode.Success with an
// empty remark, or wirecode.SubscriptionParseFailed (23) with a remark
// naming the expression and the problem.
func (c *FilterCache) Check(exprType, expr string, version int64) (code int32, remark string) {
	if _, err := c.Get(exprType, expr, version); err != nil {
		return wirecode.SubscriptionParseFailed, fmt.Sprintf("%s subscription %q does not compile: %v", exprType, expr, err)
	}
	return wirecode.Success, ""
}

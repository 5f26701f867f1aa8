// Package cache measures sluice's cache.Store side by side with a plain Redis GET and with
// dtm-labs/rockscache, on one redis-server: the hit path at 50 concurrent callers, and a cold-key
// storm (1,000 concurrent Gets of one missing key over two Store instances, counting loader
// calls). Run with
//
//	cd bench && go test -run '^$' -bench . -count 5 ./cache/
//
// The figures are in docs/cache.md.
package cache

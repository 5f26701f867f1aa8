// Package bench holds side-by-side benchmarks of Sluice against its peers (asynq, redis_rate,
// rockscache, ...). It is its own module so that the peers never become dependencies of the
// library. Run them with `cd bench && go test -run '^$' -bench . ./...`; the figures and the
// machine they were measured on are in docs/benchmarks.md.
package bench

// Package chaos holds the chaos suite that `make chaos` runs: real processes (SDK workers,
// `sluice server` instances, redis-server) killed with real signals under load, counting jobs,
// kills, lost and duplicated jobs and redelivery time, and failing on any lost job. The suite
// builds with the "chaos" tag only, so `make test` does not run it; it takes about three minutes.
//
//	make chaos                                  # all three scenarios
//	go test -tags chaos -v -run Workers ./internal/chaos/   # one of them
//
// Knobs (environment): SLUICE_CHAOS_JOBS (jobs of the worker scenario, default 50000) and
// SLUICE_CHAOS_SECONDS (load time of the server and Redis scenarios, default 75).
package chaos

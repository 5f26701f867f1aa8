package authguard

import "net/netip"

// recordKey is the hash of one client's failed authentications, its own hash tag so records
// spread over a Cluster's nodes:
//
//	<prefix>:authfail:{<client>}
//
// client is an IPv4 address or an IPv6 /64 (clientOf).
func recordKey(prefix string, client netip.Prefix) string {
	return prefix + ":authfail:{" + client.String() + "}"
}

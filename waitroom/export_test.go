package waitroom

import (
	"net/http"
	"net/url"
)

// NewLeanProxy is the room proxy's upstream client with no room in front, for the benchmarks.
func NewLeanProxy(target *url.URL) http.Handler {
	return newUpstreamProxy(target, upstreamProxyConfig{Fail: func(w http.ResponseWriter, _ *http.Request, err error) {
		http.Error(w, err.Error(), http.StatusBadGateway)
	}})
}

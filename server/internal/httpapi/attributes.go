package httpapi

import "strings"

// ReservedAttrPrefix starts the job attributes the server keeps for itself (the native API's
// payload encoding mark): clients of any API cannot set them and never see them.
const ReservedAttrPrefix = "sluice."

// PublicAttributes drops the server's reserved attributes.
func PublicAttributes(a map[string]string) map[string]string {
	out := make(map[string]string, len(a))
	for k, v := range a {
		if !strings.HasPrefix(k, ReservedAttrPrefix) {
			out[k] = v
		}
	}
	return out
}

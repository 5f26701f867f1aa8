package sluice

import (
	"errors"
	"strconv"
)

// ErrQuotaExceeded is matched (errors.Is) by every *QuotaError.
var ErrQuotaExceeded = errors.New("quota exceeded")

// QuotaError says that a namespace holds all that one of its quotas allows (its queues, stored
// jobs or bytes, endpoints, rooms or tokens), so the thing asked for was not created. It is the
// one shape of that refusal in every package; the HTTP server answers it 429 quota_exceeded with
// the quota's name as "field".
type QuotaError struct {
	// Namespace is the namespace whose quota is reached.
	Namespace string
	// Quota names the quota as the admin API spells it (max_queues, max_tokens, ...).
	Quota string
	// Limit is the quota's value.
	Limit int64
}

func (e *QuotaError) Error() string {
	return "namespace " + e.Namespace + " is at its quota " + e.Quota + " (" + strconv.FormatInt(e.Limit, 10) + ")"
}

// Is makes errors.Is(err, ErrQuotaExceeded) true.
func (e *QuotaError) Is(target error) bool { return target == ErrQuotaExceeded }

package jobs

import (
	"github.com/sluicehq/sluice/internal/jsonscan"
	"github.com/sluicehq/sluice/server/internal/httpapi"
)

// The hot job requests (publish one job, consume, ack) are decoded here without reflection when
// their body is plain: known member names without escapes, each at most once, values of the
// field's own JSON type, no nulls. Anything else (and every mistake) goes to encoding/json in
// httpapi.DecodeBody, which gives the same result for what the fast path accepts and names the field in
// its errors. fastjson_test.go checks that equivalence on many generated and mutated bodies.

// The request types below implement httpapi.FastDecoder.
var (
	_ httpapi.FastDecoder = (*publishRequest)(nil)
	_ httpapi.FastDecoder = (*consumeRequest)(nil)
	_ httpapi.FastDecoder = (*ackRequest)(nil)
)

// seenFields remembers which members an object had, to refuse duplicates (the slow path decides
// what a repeated member means).
type seenFields uint32

func (s *seenFields) first(bit uint) bool {
	if *s&(1<<bit) != 0 {
		return false
	}
	*s |= 1 << bit
	return true
}

func (p *publishRequest) DecodeFast(data []byte) bool {
	var seen seenFields
	var out publishRequest
	j := &out.publishJob
	ok := jsonscan.Members(data, func(name string, v []byte) bool {
		var ok bool
		switch name {
		case "payload":
			j.Payload, ok = jsonscan.Raw(v)
			return ok && seen.first(0)
		case "payload_base64":
			j.PayloadBase64, ok = stringPtr(v)
			return ok && seen.first(1)
		case "priority":
			j.Priority, ok = intPtr(v)
			return ok && seen.first(2)
		case "delay":
			j.Delay, ok = floatPtr(v)
			return ok && seen.first(3)
		case "run_at":
			j.RunAt, ok = stringPtr(v)
			return ok && seen.first(4)
		case "tries":
			j.Tries, ok = intPtr(v)
			return ok && seen.first(5)
		case "ttl":
			j.TTL, ok = floatPtr(v)
			return ok && seen.first(6)
		case "ttr":
			j.TTR, ok = floatPtr(v)
			return ok && seen.first(7)
		case "unique_key":
			j.UniqueKey, ok = stringPtr(v)
			return ok && seen.first(8)
		case "unique_for":
			j.UniqueFor, ok = floatPtr(v)
			return ok && seen.first(9)
		case "attributes":
			j.Attributes, ok = jsonscan.StringMap(v)
			return ok && seen.first(10)
		default: // backoff, jobs (batches), unknown members: the slow path
			return false
		}
	})
	if ok {
		*p = out
	}
	return ok
}

func (c *consumeRequest) DecodeFast(data []byte) bool {
	var seen seenFields
	var out consumeRequest
	ok := jsonscan.Members(data, func(name string, v []byte) bool {
		var ok bool
		switch name {
		case "queues":
			out.Queues, ok = jsonscan.Strings(v)
			return ok && seen.first(0)
		case "count":
			out.Count, ok = intPtr(v)
			return ok && seen.first(1)
		case "ttr":
			out.TTR, ok = floatPtr(v)
			return ok && seen.first(2)
		case "timeout":
			out.Timeout, ok = floatPtr(v)
			return ok && seen.first(3)
		default:
			return false
		}
	})
	if ok {
		*c = out
	}
	return ok
}

func (a *ackRequest) DecodeFast(data []byte) bool {
	var seen seenFields
	var out ackRequest
	ok := jsonscan.Members(data, func(name string, v []byte) bool {
		var ok bool
		switch name {
		case "delivery":
			out.Delivery, ok = intPtr(v)
			return ok && seen.first(0)
		case "result":
			out.Result, ok = jsonscan.Raw(v)
			return ok && seen.first(1)
		default: // result_base64, unknown members: the slow path
			return false
		}
	})
	if ok {
		*a = out
	}
	return ok
}

func stringPtr(v []byte) (*string, bool) {
	str, ok := jsonscan.String(v)
	return &str, ok
}

func intPtr(v []byte) (*int, bool) {
	n, ok := jsonscan.Int(v)
	return &n, ok
}

func floatPtr(v []byte) (*float64, bool) {
	f, ok := jsonscan.Float(v)
	return &f, ok
}

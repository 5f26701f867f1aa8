package store

import "encoding/binary"

// A job's record is a cmsgpack array of 20 fields (R_* in lua/lib.lua), written by the scripts.
// For jobs due now (publish_ready.lua, publish_batch.lua) the client encodes it instead: building
// the record in Lua (a table of 20 fields, then cmsgpack.pack) was a seventh of what such a publish
// cost Redis. The times are Redis's: the scripts put TIME between the pieces the client encoded, or
// (a lone job without a ttl) the client stamps them with its reading of Redis's clock (clock.go).
//
// The encoding here is byte for byte what Redis's cmsgpack makes of the same values (a test
// checks it against Redis), so a record does not depend on which side encoded it.

// newRecordFields is the number of fields of a new record (to R_CALLBACK); recordFields the most a
// record holds: a nack from a client that traces adds R_ATTEMPT (nack.lua).
const (
	newRecordFields = 20
	recordFields    = 21
)

// readyRecord is the record of a job due now (no unique key or callback), encoded but for the
// fields that take Redis's time: R_EXPIRE (now + ttl) and R_PUBLISHED and R_DUE (now). The scripts
// pack those between its pieces (head, mid and tail).
type readyRecord struct {
	s           string
	expire, due int // offsets in s of R_EXPIRE (one byte: 0, for a job without a ttl) and of R_LEASE
}

// encodeReadyRecord encodes the record of a job of fields f that is due now.
func encodeReadyRecord(f *NewJob) readyRecord {
	b := make([]byte, 0, 64+len(f.Attributes)+len(f.Payload))
	b, expire := appendReadyHead(b, f)
	due := len(b)
	b = appendReadyTail(b, f)
	return readyRecord{s: string(b), expire: expire, due: due}
}

// encodeStampedRecord encodes the whole record of a job of fields f without a ttl that is due now,
// published at nowMs (the client's reading of Redis's clock, clock.go), as publish_ready.lua
// stores it whole.
func encodeStampedRecord(f *NewJob, nowMs int64) string {
	b := make([]byte, 0, 82+len(f.Attributes)+len(f.Payload))
	b, _ = appendReadyHead(b, f)
	b = appendMsgpackInt(b, nowMs) // R_PUBLISHED
	b = appendMsgpackInt(b, nowMs) // R_DUE: a job due now is due at its publish time
	b = appendReadyTail(b, f)
	return string(b)
}

// appendReadyHead appends the array header and R_STATE to R_BMAX of the record of a job due now,
// R_EXPIRE as 0 (right for a job without a ttl) at offset expire.
func appendReadyHead(b []byte, f *NewJob) (_ []byte, expire int) {
	b = append(b, 0xdc, 0, newRecordFields) // array 16
	b = appendMsgpackInt(b, StateReady)
	b = appendMsgpackInt(b, f.Priority)
	b = appendMsgpackInt(b, f.Tries) // R_TRIES
	b = appendMsgpackInt(b, f.Tries) // R_LEFT
	b = appendMsgpackInt(b, 0)       // R_DELIVERY
	b = appendMsgpackInt(b, f.TTLMs)
	expire = len(b)
	b = appendMsgpackInt(b, 0) // R_EXPIRE
	b = appendMsgpackInt(b, f.TTRMs)
	b = appendMsgpackInt(b, f.BackoffBaseMs)
	b = appendMsgpackInt(b, f.BackoffMaxMs)
	return b, expire
}

// appendReadyTail appends R_LEASE to R_CALLBACK of the record of a job due now.
func appendReadyTail(b []byte, f *NewJob) []byte {
	b = appendMsgpackInt(b, 0)            // R_LEASE
	b = appendMsgpackStr(b, "")           // R_UNIQUE
	b = appendMsgpackStr(b, f.Attributes) // R_ATTRS
	b = appendMsgpackStr(b, f.Payload)    // R_PAYLOAD
	b = appendMsgpackStr(b, "")           // R_ERROR
	b = appendMsgpackStr(b, "")           // R_RESULT
	b = appendMsgpackInt(b, 0)            // R_FINISHED
	b = appendMsgpackStr(b, "")           // R_CALLBACK
	return b
}

// head is the array header and R_STATE to R_TTL, mid R_TTR to R_BMAX, tail R_LEASE to
// R_CALLBACK (publish_batch.lua).
func (r readyRecord) head() string { return r.s[:r.expire] }
func (r readyRecord) mid() string  { return r.s[r.expire+1 : r.due] }
func (r readyRecord) tail() string { return r.s[r.due:] }

// readyRecordAround is the record of a job due now without a ttl in the two pieces
// publish_ready.lua joins: everything before R_PUBLISHED (R_EXPIRE is 0), and the tail.
func readyRecordAround(f *NewJob) (head, tail string) {
	r := encodeReadyRecord(f)
	return r.s[:r.due], r.tail()
}

// appendMsgpackInt appends n, which is never negative (the queue validates jobs), as cmsgpack
// encodes an integral Lua number: the shortest of positive fixint, uint 8, 16, 32 and 64.
func appendMsgpackInt(b []byte, n int64) []byte {
	switch u := uint64(n); {
	case u <= 0x7f:
		return append(b, byte(u))
	case u <= 0xff:
		return append(b, 0xcc, byte(u))
	case u <= 0xffff:
		return binary.BigEndian.AppendUint16(append(b, 0xcd), uint16(u))
	case u <= 0xffffffff:
		return binary.BigEndian.AppendUint32(append(b, 0xce), uint32(u))
	default:
		return binary.BigEndian.AppendUint64(append(b, 0xcf), u)
	}
}

// appendMsgpackStr appends s as cmsgpack encodes a Lua string: fixstr, str 8, 16 or 32.
func appendMsgpackStr[T string | []byte](b []byte, s T) []byte {
	switch n := len(s); {
	case n < 32:
		b = append(b, 0xa0|byte(n))
	case n <= 0xff:
		b = append(b, 0xd9, byte(n))
	case n <= 0xffff:
		b = binary.BigEndian.AppendUint16(append(b, 0xda), uint16(n))
	default:
		b = binary.BigEndian.AppendUint32(append(b, 0xdb), uint32(n))
	}
	return append(b, s...)
}

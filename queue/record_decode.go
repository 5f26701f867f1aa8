package queue

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Positions of a record's fields, from 0 (R_* in lua/lib.lua, which count from 1).
const (
	rState = iota
	rPriority
	rTries
	rLeft
	rDelivery
	rTTL
	rExpire
	rTTR
	rBackoffBase
	rBackoffMax
	rPublished
	rDue
	rLease
	rUnique
	rAttributes
	rPayload
	rError
	rResult
	rFinished
	rCallback
)

// jobRecord is a job's record field by field: each field is a number or a string, at its
// position in num or str. Records written before callbacks end at rFinished: rCallback is "".
type jobRecord struct {
	num [recordFields]int64
	str [recordFields]string
}

// job is the Job the record describes. position is the job's place among ready jobs (-1: none).
func (r *jobRecord) job(ns, q, id string, position int64) Job {
	j := Job{
		ID:             id,
		Namespace:      ns,
		Queue:          q,
		State:          stateByCode[r.num[rState]],
		Priority:       int(r.num[rPriority]),
		Tries:          int(r.num[rTries]),
		RemainingTries: int(r.num[rLeft]),
		Deliveries:     int(r.num[rDelivery]),
		TTL:            ms(r.num[rTTL]),
		ExpiresAt:      timeMs(r.num[rExpire]),
		TTR:            ms(r.num[rTTR]),
		PublishedAt:    timeMs(r.num[rPublished]),
		DueAt:          timeMs(r.num[rDue]),
		LeaseUntil:     timeMs(r.num[rLease]),
		UniqueKey:      r.str[rUnique],
		Payload:        bytesOrNil(r.str[rPayload]),
		LastError:      r.str[rError],
		Result:         bytesOrNil(r.str[rResult]),
		FinishedAt:     timeMs(r.num[rFinished]),
		Position:       int(position),
		Backoff:        Backoff{Base: ms(r.num[rBackoffBase]), Max: ms(r.num[rBackoffMax])},
	}
	if cb := r.str[rCallback]; cb != "" {
		j.Callback = decodeCallback(cb)
	}
	if a := r.str[rAttributes]; a != "" {
		_ = json.Unmarshal([]byte(a), &j.Attributes) // written by Publish from a map: always valid
	}
	return j
}

// fieldsPerLeased is the length of one leased job in a consume reply (lease_popped in lib.lua).
const fieldsPerLeased = 4

// parseLeased reads one job lease_popped replied: its id, its record as stored before the lease,
// the delivery and the lease end, and shows the job as the lease has it (as_leased in lib.lua).
func parseLeased(ns, q string, f []any) (Job, error) {
	rec, err := decodeRecord(str(f[1]))
	if err != nil {
		return Job{}, fmt.Errorf("job %s: %w", str(f[0]), err)
	}
	j := rec.job(ns, q, str(f[0]), -1)
	j.State = StateLeased
	j.Deliveries = int(num(f[2]))
	j.RemainingTries--
	j.LeaseUntil = timeMs(num(f[3]))
	return j, nil
}

// errBadRecord is a stored record this client cannot read: not written by these scripts.
var errBadRecord = errors.New("unreadable job record")

// decodeRecord reads a stored record: a cmsgpack array (Redis with cmsgpack, every store the
// function library runs on) or lib.lua's plain codec ('n<number>;' and 's<length>:<bytes>' fields,
// the stores without cmsgpack). The first byte tells which: the plain codec starts with the state,
// a number ('n').
func decodeRecord(raw string) (jobRecord, error) {
	var r jobRecord
	if strings.HasPrefix(raw, "n") {
		return r, decodePlainRecord(raw, &r)
	}
	return r, decodeMsgpackRecord(raw, &r)
}

// decodeMsgpackRecord reads what cmsgpack.pack makes of a record: an array of integers and
// strings (cmsgpack packs an integral Lua number as the shortest integer, any other as a float).
func decodeMsgpackRecord(raw string, r *jobRecord) error {
	d := msgpackReader{s: raw}
	n, err := d.arrayLen()
	if err != nil {
		return err
	}
	// Fields past the ones this version knows (a later version's) are read and dropped, as lib.lua
	// drops them.
	var later jobRecord
	for i := range n {
		into, at := r, i
		if i >= recordFields {
			into, at = &later, 0
		}
		if err := d.field(into, at, i); err != nil {
			return err
		}
	}
	if d.pos != len(d.s) {
		return fmt.Errorf("%w: %d bytes after the last field", errBadRecord, len(d.s)-d.pos)
	}
	return nil
}

// msgpackReader reads msgpack values from s.
type msgpackReader struct {
	s   string
	pos int
}

// take returns the next n bytes.
func (d *msgpackReader) take(n int) (string, error) {
	if n < 0 || len(d.s)-d.pos < n {
		return "", fmt.Errorf("%w: cut short at byte %d", errBadRecord, d.pos)
	}
	b := d.s[d.pos : d.pos+n]
	d.pos += n
	return b, nil
}

// uint reads a big-endian unsigned integer of size bytes.
func (d *msgpackReader) uint(size int) (uint64, error) {
	b, err := d.take(size)
	var u uint64
	for i := range len(b) {
		u = u<<8 | uint64(b[i])
	}
	return u, err
}

func (d *msgpackReader) arrayLen() (int, error) {
	t, err := d.take(1)
	if err != nil {
		return 0, err
	}
	switch c := t[0]; {
	case c&0xf0 == 0x90:
		return int(c & 0x0f), nil
	case c == 0xdc:
		n, err := d.uint(2)
		return int(n), err
	case c == 0xdd:
		n, err := d.uint(4)
		return int(n), err
	default:
		return 0, fmt.Errorf("%w: starts with 0x%02x, not an array", errBadRecord, c)
	}
}

// field reads the record's field pos (from 0) into r at position i.
func (d *msgpackReader) field(r *jobRecord, i, pos int) error {
	t, err := d.take(1)
	if err != nil {
		return err
	}
	c := t[0]
	var u uint64
	switch {
	case c <= 0x7f: // positive fixint
		r.num[i] = int64(c)
		return nil
	case c >= 0xe0: // negative fixint
		r.num[i] = int64(int8(c))
		return nil
	case c&0xe0 == 0xa0: // fixstr
		r.str[i], err = d.take(int(c & 0x1f))
		return err
	case c >= 0xd9 && c <= 0xdb: // str 8, 16, 32
		if u, err = d.uint(1 << (c - 0xd9)); err == nil {
			r.str[i], err = d.take(int(u))
		}
		return err
	case c >= 0xcc && c <= 0xcf: // uint 8, 16, 32, 64
		u, err = d.uint(1 << (c - 0xcc))
		r.num[i] = int64(u)
		return err
	case c >= 0xd0 && c <= 0xd3: // int 8, 16, 32, 64
		size := 1 << (c - 0xd0)
		u, err = d.uint(size)
		shift := 64 - 8*size
		r.num[i] = int64(u<<shift) >> shift // sign-extend
		return err
	case c == 0xca: // float 32
		u, err = d.uint(4)
		r.num[i] = int64(math.Float32frombits(uint32(u)))
		return err
	case c == 0xcb: // float 64
		u, err = d.uint(8)
		r.num[i] = int64(math.Float64frombits(u))
		return err
	default:
		return fmt.Errorf("%w: field %d has type 0x%02x", errBadRecord, pos+1, c)
	}
}

// decodePlainRecord reads pack_plain's codec (lib.lua).
func decodePlainRecord(raw string, r *jobRecord) error {
	for i := 0; raw != "" && i < recordFields; i++ {
		switch raw[0] {
		case 'n':
			end := strings.IndexByte(raw, ';')
			if end < 0 {
				return fmt.Errorf("%w: field %d has no end", errBadRecord, i+1)
			}
			n, err := strconv.ParseFloat(raw[1:end], 64)
			if err != nil {
				return fmt.Errorf("%w: field %d: %w", errBadRecord, i+1, err)
			}
			r.num[i], raw = int64(n), raw[end+1:]
		case 's':
			colon := strings.IndexByte(raw, ':')
			n, err := strconv.Atoi(raw[1:max(colon, 1)])
			if colon < 0 || err != nil || n < 0 || len(raw)-colon-1 < n {
				return fmt.Errorf("%w: field %d has a bad length", errBadRecord, i+1)
			}
			r.str[i], raw = raw[colon+1:colon+1+n], raw[colon+1+n:]
		default:
			return fmt.Errorf("%w: field %d starts with %q", errBadRecord, i+1, raw[0])
		}
	}
	if raw != "" {
		return fmt.Errorf("%w: more than %d fields", errBadRecord, recordFields)
	}
	return nil
}

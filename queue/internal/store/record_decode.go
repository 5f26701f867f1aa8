package store

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Field is the position of one field of a record, from 0 (R_* in lua/lib.lua, which count from 1).
type Field int

// The fields of a record.
const (
	RState Field = iota
	RPriority
	RTries
	RLeft
	RDelivery
	RTTL
	RExpire
	RTTR
	RBackoffBase
	RBackoffMax
	RPublished
	RDue
	RLease
	RUnique
	RAttributes
	RPayload
	RError
	RResult
	RFinished
	RCallback
	// RAttempt is what the last failed attempt left for the next one's trace span to link to
	// (tracing.Tracer.AttemptRef), "" for none.
	RAttempt
)

// The states a record's RState holds (S_* in lib.lua).
const (
	StateDelayed = 1
	StateReady   = 2
	StateLeased  = 3
	StateDead    = 4
	StateDone    = 5
)

// Record is a job's record field by field: each field is a number or a string. Records written
// before callbacks end at RFinished: RCallback is "". Most records end at RCallback: RAttempt is "".
type Record struct {
	num [recordFields]int64
	str [recordFields]string
}

// Num is the number field f holds (0 for a string field).
func (r *Record) Num(f Field) int64 { return r.num[f] }

// Str is the string field f holds ("" for a number field).
func (r *Record) Str(f Field) string { return r.str[f] }

// Job is a job read back: its id, its record, and its place among ready jobs (-1: none).
type Job struct {
	ID       string
	Position int64
	// Size is what the job counted against a consume's byte bound (consume.lua): its record's bytes
	// as stored and its id's; 0 outside a consume's answer.
	Size int64
	Record
}

// fieldsPerJob is the length of one job in script replies (reply_job in lib.lua).
const fieldsPerJob = 22

// parseJob reads the fields reply_job writes.
func parseJob(f []any) Job {
	j := Job{ID: str(f[0]), Position: num(f[18])}
	r := &j.Record
	for i, at := range replyNumbers {
		r.num[at] = num(f[1+i])
	}
	r.str[RUnique], r.str[RAttributes], r.str[RPayload] = str(f[12]), str(f[13]), str(f[14])
	r.str[RError], r.str[RResult], r.str[RCallback] = str(f[15]), str(f[16]), str(f[21])
	r.num[RFinished], r.num[RBackoffBase], r.num[RBackoffMax] = num(f[17]), num(f[19]), num(f[20])
	return j
}

// replyNumbers are the record fields reply_job sends first, in its order, after the id.
var replyNumbers = [...]Field{RState, RPriority, RTries, RLeft, RDelivery, RTTL, RExpire, RTTR, RPublished, RDue, RLease}

// parseJobs reads n jobs that reply_job wrote one after the other.
func parseJobs(f []any, n int) []Job {
	jobs := make([]Job, 0, n)
	for i := range n {
		jobs = append(jobs, parseJob(f[i*fieldsPerJob:(i+1)*fieldsPerJob]))
	}
	return jobs
}

// fieldsPerLeased is the length of one leased job in a consume reply (lease_popped in lib.lua).
const fieldsPerLeased = 4

// parseLeased reads one job lease_popped replied: its id, its record as stored before the lease,
// the delivery and the lease end, and shows the record as the lease has it (as_leased in lib.lua).
func parseLeased(f []any) (Job, error) {
	j := Job{ID: str(f[0]), Position: -1}
	j.Size = int64(len(str(f[1])) + len(j.ID))
	if err := decodeRecord(str(f[1]), &j.Record); err != nil {
		return Job{}, fmt.Errorf("job %s: %w", j.ID, err)
	}
	j.num[RState] = StateLeased
	j.num[RDelivery] = num(f[2])
	j.num[RLeft]--
	j.num[RLease] = num(f[3])
	return j, nil
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func num(v any) int64 {
	n, _ := v.(int64)
	return n
}

// errBadRecord is a stored record this client cannot read: not written by these scripts.
var errBadRecord = errors.New("unreadable job record")

// decodeRecord reads a stored record: a cmsgpack array (Redis with cmsgpack, every store the
// function library runs on) or lib.lua's plain codec ('n<number>;' and 's<length>:<bytes>' fields,
// the stores without cmsgpack). The first byte tells which: the plain codec starts with the state,
// a number ('n').
func decodeRecord(raw string, r *Record) error {
	if strings.HasPrefix(raw, "n") {
		return decodePlainRecord(raw, r)
	}
	return decodeMsgpackRecord(raw, r)
}

// decodeMsgpackRecord reads what cmsgpack.pack makes of a record: an array of integers and
// strings (cmsgpack packs an integral Lua number as the shortest integer, any other as a float).
func decodeMsgpackRecord(raw string, r *Record) error {
	d := msgpackReader{s: raw}
	n, err := d.arrayLen()
	if err != nil {
		return err
	}
	// Fields past the ones this version knows (a later version's) are read and dropped, as lib.lua
	// drops them.
	var later Record
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
func (d *msgpackReader) field(r *Record, i, pos int) error {
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
func decodePlainRecord(raw string, r *Record) error {
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

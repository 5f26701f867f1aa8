package relay

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"strconv"
)

// MaxIdempotencyKey bounds the length of SubmitParams.IdempotencyKey (the Idempotency-Key
// header), in bytes.
const MaxIdempotencyKey = 255

// checkIdempotencyKey refuses a key that is too long or holds anything but visible ASCII (a
// UUID, a ULID, a hash, an order number and the like all pass).
func checkIdempotencyKey(key string) error {
	if len(key) > MaxIdempotencyKey {
		return fieldErr("idempotency_key", "is %d bytes; at most %d", len(key), MaxIdempotencyKey)
	}
	for i := 0; i < len(key); i++ {
		if key[i] <= ' ' || key[i] > '~' {
			return fieldErr("idempotency_key", "must be 1 to %d visible ASCII characters (no space or control character)", MaxIdempotencyKey)
		}
	}
	return nil
}

// idempotencyScope names the record of a key: the SHA-256 of who submits (namespace and
// submitter, both from the caller's credentials) and the key. Another token's (or namespace's)
// use of the same key names another record, so it never sees the first one's task.
func idempotencyScope(namespace, submitter, key string) [32]byte {
	h := sha256.New()
	writeFields(h, namespace, submitter, key)
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// requestHash is the SHA-256 (hex) of the canonical request a task makes: its endpoint, type,
// method, final URL (query included), headers (JSON with sorted names), body, the priority asked
// for, its subject and its completion callback. A key sent again with a request whose hash
// differs is a conflict, not a resend. The priority grant is left out: it is a credential, and a
// client may fetch a fresh one before it resends.
func requestHash(endpoint string, p *SubmitParams, req preparedRequest) string {
	h := sha256.New()
	writeFields(h, endpoint, string(p.Type), req.method, req.url, req.header, string(p.Body),
		strconv.Itoa(p.Priority), p.Subject, req.callback)
	return hex.EncodeToString(h.Sum(nil))
}

// writeFields writes each field with its length first, so that no two lists of fields write the
// same bytes ("ab","c" and "a","bc" differ).
func writeFields(h hash.Hash, fields ...string) {
	var n [8]byte
	for _, f := range fields {
		binary.BigEndian.PutUint64(n[:], uint64(len(f)))
		h.Write(n[:])
		h.Write([]byte(f))
	}
}

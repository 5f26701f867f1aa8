package redisx

import (
	"crypto/rand"
	"encoding/base64"
	"strconv"
	"time"
)

// OnceTTL is how long Redis keeps the answer of a call of a Once script under its call key: far
// longer than a client library takes to send a call again after a read timeout or a broken
// connection (go-redis: a few read timeouts and backoffs), short enough that the answers of a busy
// queue cost little memory.
const OnceTTL = 60 * time.Second

// onceHelper runs a Once script's body at most once per call key. KEYS[1] is the call key (it
// carries the call id, and the hash tag of the keys after it); the body gets the other keys. A
// call key that holds an answer means this call already ran: its answer is returned again and
// nothing is done. Otherwise the body runs and its answer is kept under the call key for OnceTTL.
// Answers are kept with cmsgpack, which keeps what Redis makes of a script's answer (integers,
// strings, nested arrays, nil, status and error tables); a store without cmsgpack runs the body
// every time. An error the body raises is not kept: the call changed nothing (a script that
// raises has done nothing it means to keep) and may run again.
var onceHelper = `
local function sluice_run_once(keys, args, codec, body)
  local call_key = keys[1]
  local rest = {}
  for i = 2, #keys do rest[i - 1] = keys[i] end
  if not codec then return body(rest, args) end
  local kept = redis.call('GET', call_key)
  if kept then return codec.unpack(kept) end
  local answer = body(rest, args)
  redis.call('SET', call_key, codec.pack(answer), 'PX', '` + strconv.FormatInt(OnceTTL.Milliseconds(), 10) + `')
  return answer
end
`

// wrapOnce makes the body (with its prologue) of a Once script run through onceHelper, in the
// function form or the EVAL form (codec is how that form reaches cmsgpack).
func wrapOnce(prologueAndBody, codec string) string {
	return "return sluice_run_once(KEYS, ARGV, " + codec + ", function(KEYS, ARGV)\n" + prologueAndBody + "\nend)"
}

// NewCallID returns a new call id: 16 random bytes, URL-safe. A client makes one per logical call
// of a Once script and sends it with every attempt of that call (go-redis resends the same
// command), so Redis knows a repeat when one comes.
func NewCallID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// OnceKeys are the keys of a call of a Once script: the call key first, then the script's own.
// callKey must carry the same hash tag as keys (each package builds it in its keys.go).
func OnceKeys(callKey string, keys []string) []string {
	out := make([]string, 0, 1+len(keys))
	out = append(out, callKey)
	return append(out, keys...)
}

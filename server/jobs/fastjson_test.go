package jobs

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/server/internal/httpapi"
)

// fastCase pairs a request type's fast path with a fresh value for the general path.
type fastCase struct {
	name  string
	fresh func() httpapi.FastDecoder
}

var fastCases = []fastCase{
	{"publish", func() httpapi.FastDecoder { return &publishRequest{} }},
	{"consume", func() httpapi.FastDecoder { return &consumeRequest{} }},
	{"ack", func() httpapi.FastDecoder { return &ackRequest{} }},
}

// checkFastEquivalent fails when the fast path accepts a body that encoding/json decodes
// differently or refuses. It reports whether the fast path accepted it.
func checkFastEquivalent(t *testing.T, c fastCase, body string) bool {
	t.Helper()
	fast := c.fresh()
	if !fast.DecodeFast([]byte(body)) {
		return false
	}
	slow := c.fresh()
	if err := httpapi.DecodeJSON([]byte(body), slow); err != nil {
		t.Fatalf("%s: fast path accepted %q, encoding/json refused it: %v", c.name, body, err)
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("%s: %q decoded differently:\nfast %+v\nslow %+v", c.name, body, fast, slow)
	}
	return true
}

// TestFastJSONTakesPlainBodies: the bodies clients send every second take the fast path (else
// it would be dead code and the checks below would prove nothing).
func TestFastJSONTakesPlainBodies(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		fc   fastCase
		body string
	}{
		{fastCases[0], `{"payload":"` + strings.Repeat("x", 100) + `","tries":1,"ttl":600}`},
		{fastCases[0], ` { "payload" : {"order": [1, 2.5, "é", null, true]}, "priority": 3, "delay": 0.25,
			"run_at": "2026-01-02T15:04:05Z", "ttr": 30, "unique_key": "order-1", "unique_for": 60,
			"attributes": {"a": "b"}, "payload_base64": "eA==" } `},
		{fastCases[0], `{}`},
		{fastCases[1], `{"queues":["emails","sms"],"count":64,"ttr":300,"timeout":0}`},
		{fastCases[1], `{"queues":[]}`},
		{fastCases[2], `{"delivery":1}`},
		{fastCases[2], `{"delivery": 12, "result": {"sent": true}}`},
	} {
		if !checkFastEquivalent(t, c.fc, c.body) {
			t.Errorf("%s: %s took the general path", c.fc.name, c.body)
		}
	}
}

// TestFastJSONFallsBack: what the fast path does not handle simply goes to encoding/json, which
// names the field in its error.
func TestFastJSONFallsBack(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		fc   fastCase
		body string
	}{
		{fastCases[0], `{"payload":1,"priority":"3"}`},
		{fastCases[0], `{"payload":1,"priority":1.5}`},
		{fastCases[0], `{"payload":1,"priority":null}`},
		{fastCases[0], `{"payload":1,"Priority":2}`},
		{fastCases[0], `{"payload":1,"payload":2}`},
		{fastCases[0], `{"pay\u006coad":1}`},
		{fastCases[0], `{"payload":1,"jobs":[]}`},
		{fastCases[0], `{"payload":1,"backoff":{"base":1}}`},
		{fastCases[0], `{"payload":1,"nope":1}`},
		{fastCases[0], `{"payload":[1 2]}`},
		{fastCases[0], `{"payload":1} {}`},
		{fastCases[0], `{"unique_key":"a\"b"}`},
		{fastCases[0], `{"unique_key":"a\nb"}`},
		{fastCases[0], "{\"unique_key\":\"\xff\"}"},
		{fastCases[0], `{"ttl":1e999}`},
		{fastCases[0], `{"tries":99999999999999999999}`},
		{fastCases[1], `{"queues":"emails"}`},
		{fastCases[1], `{"queues":["a",1]}`},
		{fastCases[1], `{"count":01}`},
		{fastCases[2], `{"delivery":1,"result_base64":"eA=="}`},
		{fastCases[2], `{"delivery":-}`},
		{fastCases[2], `[1]`},
		{fastCases[2], `{"delivery":1,}`},
	} {
		if checkFastEquivalent(t, c.fc, c.body) {
			t.Errorf("%s: %s took the fast path", c.fc.name, c.body)
		}
	}
}

// TestFastJSONMatchesEncodingJSON generates many bodies, plain and broken, and checks that
// whatever the fast path accepts, encoding/json decodes to the same value.
func TestFastJSONMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	accepted := 0
	const n = 20000
	for range n {
		c := fastCases[rng.IntN(len(fastCases))]
		body := randomBody(rng)
		if rng.IntN(4) == 0 {
			body = mutate(rng, body)
		}
		if checkFastEquivalent(t, c, body) {
			accepted++
		}
	}
	// The generator must reach the fast path often, or this test checks little.
	if accepted < n/20 {
		t.Fatalf("only %d of %d generated bodies took the fast path", accepted, n)
	}
}

// FuzzFastJSON runs the same check on fuzzed bodies (go test -fuzz FuzzFastJSON ./server).
func FuzzFastJSON(f *testing.F) {
	for _, s := range []string{`{"payload":"x","tries":1,"ttl":600}`, `{"queues":["a"],"count":1}`,
		`{"delivery":1,"result":[1,{"a":null}]}`, `{"attributes":{"k":"v"}}`, `{}`, ` {"delay": -0.5e3 } `} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		for _, c := range fastCases {
			checkFastEquivalent(t, c, body)
		}
	})
}

var (
	fastNames = []string{"payload", "payload_base64", "priority", "delay", "run_at", "tries", "ttl", "ttr",
		"unique_key", "unique_for", "attributes", "queues", "count", "timeout", "delivery", "result",
		"backoff", "jobs", "Payload", "DELIVERY", "result_base64", "x"}
	fastValues = []string{`0`, `-0`, `1`, `-7`, `42`, `1.5`, `-0.25`, `1e3`, `2E-2`, `01`, `1.`, `.5`, `1e`,
		`9223372036854775807`, `9223372036854775808`, `1e400`, `"s"`, `""`, `"é"`, `"a\"b"`, `"\u0041"`,
		"\"\xff\"", "\"a\tb\"", `"2026-01-02T15:04:05Z"`, `null`, `true`, `false`, `tru`, `[]`, `["a","b"]`,
		`["a",1]`, `[ "a" , "b" ]`, `{}`, `{"k":"v"}`, `{"k":1}`, `{"k":"v","k":"w"}`, `[[[]]]`,
		`{"a":[1,{"b":null}]}`, `[1 2]`, `{"a" "b"}`, `{"a",1}`}
	fastSpaces = []string{"", "", "", " ", "\n\t", "\r\n  "}
)

// randomBody builds an object of random members (known, misspelt, repeated) and values (right
// and wrong types, edge numbers, escapes, invalid UTF-8), with random whitespace.
func randomBody(rng *rand.Rand) string {
	sp := func() string { return fastSpaces[rng.IntN(len(fastSpaces))] }
	var b strings.Builder
	b.WriteString(sp() + "{")
	for i := range rng.IntN(5) {
		if i > 0 {
			b.WriteString(sp() + ",")
		}
		fmt.Fprintf(&b, "%s%q%s:%s%s", sp(), fastNames[rng.IntN(len(fastNames))], sp(), sp(), fastValues[rng.IntN(len(fastValues))])
	}
	b.WriteString(sp() + "}" + sp())
	return b.String()
}

// mutate breaks a body a little: a byte dropped, doubled or replaced, or the body cut short.
func mutate(rng *rand.Rand, s string) string {
	if s == "" {
		return s
	}
	i := rng.IntN(len(s))
	switch rng.IntN(4) {
	case 0:
		return s[:i] + s[i+1:]
	case 1:
		return s[:i] + s[i:i+1] + s[i:]
	case 2:
		const junk = "{}[]\",: \\x0"
		return s[:i] + string(junk[rng.IntN(len(junk))]) + s[i+1:]
	default:
		return s[:i]
	}
}

package outbound_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/sluicehq/sluice/internal/outbound"
)

func ExampleUnderPrefix() {
	endpoint := "https://gen.example.com/v1"
	for _, u := range []string{
		"https://gen.example.com/v1/images?size=1024",
		"https://GEN.example.com:443/v1",
		"https://gen.example.com/v1x",
		"https://gen.example.com/v1/../admin",
		"https://gen.example.com@evil.example/v1",
	} {
		fmt.Println(outbound.UnderPrefix(u, endpoint), u)
	}
	// Output:
	// true https://gen.example.com/v1/images?size=1024
	// true https://GEN.example.com:443/v1
	// false https://gen.example.com/v1x
	// false https://gen.example.com/v1/../admin
	// false https://gen.example.com@evil.example/v1
}

func ExampleSender_Do() {
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer target.Close()

	// httptest listens on loopback, which a default Sender refuses.
	s, err := outbound.New(outbound.Config{AllowPrivate: true})
	if err != nil {
		panic(err)
	}
	defer s.Close()
	resp, err := s.Do(context.Background(), outbound.Request{Method: http.MethodPost, URL: target.URL})
	outcome, after := outbound.Classify(resp, err)
	fmt.Println(resp.Status, outcome, after)
	// Output: 503 retry 30s
}

package sluice_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/sluicehq/sluice"
)

func TestFieldError(t *testing.T) {
	t.Parallel()
	err := fmt.Errorf("queue: invalid %w", sluice.Invalid("ttr", "must be at least %s", "1ms"))
	var fe *sluice.FieldError
	if !errors.As(err, &fe) || fe.Field != "ttr" || fe.Reason != "must be at least 1ms" {
		t.Fatalf("errors.As(%v) = %+v", err, fe)
	}
	if !errors.Is(err, sluice.ErrInvalid) {
		t.Fatalf("errors.Is(%v, ErrInvalid) = false", err)
	}
	if got, want := err.Error(), "queue: invalid ttr: must be at least 1ms"; got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
	if errors.Is(errors.New("ttr: must be at least 1ms"), sluice.ErrInvalid) {
		t.Fatal("a plain error matches ErrInvalid")
	}
}

func ExampleFieldError() {
	err := fmt.Errorf("relay: %w", sluice.Invalid("hold", "must be at least 1ms"))
	var fe *sluice.FieldError
	if errors.As(err, &fe) {
		fmt.Println(fe.Field, "-", fe.Reason)
	}
	fmt.Println(err)
	// Output:
	// hold - must be at least 1ms
	// relay: hold: must be at least 1ms
}

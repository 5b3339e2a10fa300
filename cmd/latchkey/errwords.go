package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/latchkey/latchkey/store"
)

// kindWords are the plain words the CLI uses for a store failure's kind,
// in place of the sentinel's terse text. The first match wins.
var kindWords = []struct {
	kind  error
	words string
}{
	{store.ErrUnsupported, "not applied: refused by the store"},
	{store.ErrTransient, "store unreachable or failing; nothing changed"},
	{store.ErrUnknownOutcome, "no answer from the store; the write may or may not have been applied"},
	{store.ErrClosed, "store closed"},
}

// identifierWords replace the Go names that library messages use for
// their settings with what a CLI user sets instead.
var identifierWords = strings.NewReplacer(
	"Options.RequestTimeout", "the request timeout",
	"Options.NoCompareAndDelete", "no-compare-and-delete=1 in the store URL",
	"Options.MaxValueSize", "the store's value size limit",
	"Options.Username/Password", "the user and password in the store URL",
	"Options.Endpoints", "the hosts in the store URL",
	context.DeadlineExceeded.Error(), "timed out",
)

// plainMessage is err's message in the words the CLI promises: the kind
// of a store failure said plainly ("access denied", "not applied: refused
// by the store (501 NotImplemented)"), no Go identifiers.
func plainMessage(err error, msg string) string {
	var oe *store.OpError
	if errors.As(err, &oe) {
		if words := opWords(oe); words != "" {
			msg = strings.Replace(msg, oe.Error(), words, 1)
		}
	}
	return identifierWords.Replace(msg)
}

// opWords says an *store.OpError plainly, or "" to keep its own text.
func opWords(oe *store.OpError) string {
	words := ""
	switch {
	case oe.Status == 401 || oe.Status == 403:
		words = "access denied"
	default:
		for _, kw := range kindWords {
			if errors.Is(oe.Kind, kw.kind) {
				words = kw.words
				break
			}
		}
	}
	if words == "" {
		return ""
	}
	msg := fmt.Sprintf("%s: %s %q: %s", oe.Backend, oe.Op, oe.Key, words)
	if oe.Status != 0 {
		msg += fmt.Sprintf(" (%d %s)", oe.Status, oe.Code)
		msg = strings.Replace(msg, " )", ")", 1)
	}
	if oe.Err != nil {
		msg += ": " + oe.Err.Error()
	}
	return msg
}

// maxCauses is how many causes of a joined error are printed.
const maxCauses = 3

// capErrors returns err with any joined list of causes (errors.Join) cut
// to its first maxCauses plus "and N more", so a failure of hundreds of
// deletes stays one readable line.
func capErrors(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	for e := err; e != nil; {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			errs := j.Unwrap()
			if len(errs) > maxCauses {
				parts := make([]string, 0, maxCauses+1)
				for _, c := range errs[:maxCauses] {
					parts = append(parts, c.Error())
				}
				parts = append(parts, fmt.Sprintf("and %d more", len(errs)-maxCauses))
				msg = strings.Replace(msg, e.Error(), strings.Join(parts, "; "), 1)
			}
			break
		}
		e = errors.Unwrap(e)
	}
	return &cappedError{msg: msg, err: err}
}

// cappedError is an error with a shortened message that still matches
// its causes.
type cappedError struct {
	msg string
	err error
}

func (c *cappedError) Error() string { return c.msg }
func (c *cappedError) Unwrap() error { return c.err }

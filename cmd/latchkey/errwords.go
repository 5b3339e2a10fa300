package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/latchkey/latchkey/store"
)

// This file is the one place that turns a failure into the words the CLI
// prints. A command ends with one line of at most maxLine characters that
// says what happened in an operator's words: "store unreachable", "store
// answered but refused (500: no leader)", "outcome unknown: the write may
// or may not have applied", how often and for how long it was tried, and
// what to do. The raw chain of causes (library and SDK wording) is printed
// on a second, indented line ("  cause: ...") only with --verbose (or
// LATCHKEY_VERBOSE=1).

// maxLine is the length a message line aims to stay within.
const maxLine = 160

// identifierWords replace the Go names that library messages use for
// their settings with what a CLI user sets instead.
var identifierWords = strings.NewReplacer(
	"Options.RequestTimeout", "the request timeout",
	"Options.NoCompareAndDelete", "no-compare-and-delete=1 in the store URL",
	"Options.MaxValueSize", "the store's value size limit",
	"Options.Username/Password", "the user and password in the store URL",
	"Options.Endpoints", "the hosts in the store URL",
	"Options.Timeout", "-max-time",
	"Options.TransientBudget", "the retry budget",
	"ctx's deadline", "the deadline",
	context.DeadlineExceeded.Error(), "timed out",
)

// plainMessage is the line to print for err, whose own text is msg, and
// the raw text behind it for --verbose ("" when the line is the raw text).
// A store failure in err's chain is said as trouble (see troubleOf); any
// other message keeps its words, Go identifiers replaced.
func plainMessage(err error, msg string) (line, cause string) {
	return plainMessageTried(err, msg, "", nil)
}

// plainMessageTried is plainMessage with the account of the retries
// given (" after 10 tries over 1.9s", or ""), for a command that counted
// them (see streakStore), and news, when not nil, the store's last answer
// to say instead of the failure in err: a request our own deadline cut
// short (streakStore.lastAnswer).
func plainMessageTried(err error, msg, retries string, news *store.OpError) (line, cause string) {
	var oe *store.OpError
	if !errors.As(err, &oe) {
		return identifierWords.Replace(msg), ""
	}
	tr := troubleOf(oe)
	if news != nil {
		// oe is a request our side cut short: say the store's last answer.
		if t := troubleOf(news); t.what != "" {
			tr = t
		}
	}
	if tr.what == "" {
		return identifierWords.Replace(msg), ""
	}
	prefix, suffix := commandParts(msg, oe)
	line = prefix + tr.say(len(prefix), retries, suffix)
	return line, identifierWords.Replace(msg)
}

// trouble is a store failure in the operator's words.
type trouble struct {
	what   string // "store unreachable", "access denied", ...
	detail string // the short cause: "dial 127.0.0.1:8500: connection refused"
	advice string // what to do, or ""
	// unknown: a write was sent and may have applied; read: the
	// operation changes nothing anyway; key: the operation's key.
	unknown, read bool
	key           string
}

// say is the trouble as one line, with retries (" after 21 tries over
// 1.9s", or "") after what failed and then the command's own words after
// it (suffix, "; nothing written"), the detail dropped when the line would
// be too long.
func (t trouble) say(before int, retries, suffix string) string {
	s := t.what
	if t.detail != "" {
		s += " (" + t.detail + ")"
	}
	s += retries
	advice := t.advice
	switch {
	case t.unknown:
		s = outcomeUnknown + ": " + s
		advice = "check with `latchkey kv get " + shorten(t.key, 40) + "` before retrying"
	case !t.read && t.what != "interrupted" && suffix == "":
		s += "; nothing changed"
	}
	s += suffix
	if advice != "" {
		s += "; " + advice
	}
	if before+len(s) > maxLine && t.detail != "" {
		t.detail = ""
		return t.say(before, retries, suffix)
	}
	return s
}

// troubleOf classifies oe: whether the store answered (an HTTP status, a
// server's own refusal such as "no leader") or not (no connection, no
// answer in time), and what that means for the operation. A zero trouble
// means oe says it well enough itself (a conflict, a missing key).
func troubleOf(oe *store.OpError) trouble {
	t := troubleKind(oe)
	t.unknown = errors.Is(oe.Kind, store.ErrUnknownOutcome)
	t.read = oe.Op == "get" || oe.Op == "list" || oe.Op == "watch"
	t.key = oe.Key
	return t
}

// troubleKind is troubleOf's what, detail and advice.
func troubleKind(oe *store.OpError) trouble {
	status := ""
	if oe.Status != 0 {
		status = strings.TrimSpace(fmt.Sprintf("%d %s", oe.Status, oe.Code))
	}
	where := fmt.Sprintf("%s %s %q", oe.Backend, oe.Op, shorten(oe.Key, 40))
	switch {
	case oe.Status == 401 || oe.Status == 403:
		return trouble{what: "access denied", detail: where + ": " + status, advice: "check the credentials and the store's permissions"}
	case errors.Is(oe.Kind, store.ErrUnsupported):
		d := where
		if status != "" {
			d += ": " + status
		}
		return trouble{what: "not applied: refused by the store", detail: d}
	case errors.Is(oe.Kind, store.ErrClosed):
		return trouble{what: "store closed", detail: where}
	case !errors.Is(oe.Kind, store.ErrTransient) && !errors.Is(oe.Kind, store.ErrUnknownOutcome):
		return trouble{}
	}
	switch {
	case oe.Status == 429:
		return trouble{what: "store busy, refusing requests", detail: where + ": " + status, advice: "retry later or give it more time"}
	case oe.Status != 0 || answeredRefusal(oe.Err):
		why := status
		if r := refusalWords(oe.Err); r != "" {
			why = strings.TrimPrefix(why+": "+r, ": ")
		}
		return trouble{what: "store answered but refused", detail: why, advice: "check the store's leader and health"}
	case unreachable(oe.Err):
		return trouble{what: "store unreachable", detail: netDetail(oe.Err), advice: "check the store is up and --store is right"}
	case errors.Is(oe.Err, context.DeadlineExceeded) || isTimeout(oe.Err):
		return trouble{what: "store not answering", detail: where + ": timed out", advice: "check the store, or give it more time"}
	case errors.Is(oe.Err, context.Canceled):
		return trouble{what: "interrupted", detail: where}
	}
	return trouble{what: "store failing", detail: where + ": " + shorten(causeText(oe), 60)}
}

// outcomeUnknown starts the line of a write that may or may not have
// applied.
const outcomeUnknown = "outcome unknown: the write may or may not have applied"

// unreachable reports whether err means no connection was made: a
// refused or unroutable dial, an unknown host.
func unreachable(err error) bool {
	var ne *net.OpError
	var de *net.DNSError
	return errors.As(err, &de) || errors.As(err, &ne) && ne.Op == "dial" ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH)
}

// answeredRefusal reports whether err is a server's own refusal rather
// than a failure to reach it: an error that is no network error, whose
// text names a leader election (etcd's "etcdserver: no leader").
func answeredRefusal(err error) bool {
	var ne net.Error
	return err != nil && !errors.As(err, &ne) && mentionsLeader(err)
}

func mentionsLeader(err error) bool {
	return err != nil && strings.Contains(strings.ToLower(err.Error()), "leader")
}

// refusalWords says why a server that answered refused, from its own
// words: Consul's "No cluster leader" and "rpc error getting client"
// (the agent cannot reach its servers), etcd's "no leader".
func refusalWords(err error) string {
	switch {
	case err == nil:
		return ""
	case mentionsLeader(err):
		return "no leader"
	case strings.Contains(err.Error(), "rpc error getting client"), strings.Contains(err.Error(), "No known Consul servers"):
		return "agent cannot reach its servers"
	}
	return ""
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// netDetail is the short form of a connection failure: "127.0.0.1:8500:
// connection refused", "no such host db.example".
func netDetail(err error) string {
	var de *net.DNSError
	if errors.As(err, &de) {
		return "no such host " + de.Name
	}
	var ne *net.OpError
	if errors.As(err, &ne) && ne.Addr != nil {
		why := ne.Err.Error()
		if i := strings.LastIndex(why, ": "); i >= 0 {
			why = why[i+2:]
		}
		return ne.Addr.String() + ": " + why
	}
	return shorten(err.Error(), 60)
}

// brief is what the trouble is, detail included, without advice.
func (t trouble) brief() string {
	if t.detail != "" {
		return t.what + " (" + t.detail + ")"
	}
	return t.what
}

// causeText is the text of oe's cause, or its kind's when it has none.
func causeText(oe *store.OpError) string {
	if oe.Err != nil {
		return oe.Err.Error()
	}
	return oe.Kind.Error()
}

// libraryPrefixes start the messages of the library packages: the CLI's
// own words come before the first of them.
var libraryPrefixes = []string{"lease: ", "cas: ", "publish: ", "gc: "}

// commandParts splits msg around the library's part of it: the command's
// own words before ("lock run: not acquired within --wait 2s: ") and
// after ("; nothing written"). What is between is said by troubleOf.
func commandParts(msg string, oe *store.OpError) (prefix, suffix string) {
	raw := oe.Error()
	end := len(msg)
	if i := strings.Index(msg, raw); i >= 0 {
		end = i
		suffix = msg[i+len(raw):]
	}
	cut := end
	for _, p := range append(libraryPrefixes, oe.Backend+": ") {
		for i := 0; i < end; {
			j := strings.Index(msg[i:end], p)
			if j < 0 {
				break
			}
			if at := i + j; at == 0 || strings.HasSuffix(msg[:at], ": ") || strings.HasSuffix(msg[:at], "; ") {
				cut = min(cut, at)
				break
			}
			i += j + 1
		}
	}
	prefix = msg[:cut]
	if strings.HasPrefix(suffix, ":") { // oe's text was a prefix of a longer cause
		suffix = ""
	}
	return prefix, suffix
}

// shorten cuts s to at most n characters, marking the cut with "…".
func shorten(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// printCause prints the raw cause as the indented second line of a
// message, for --verbose.
func printCause(w io.Writer, cause string) {
	if cause != "" {
		fmt.Fprintln(w, "  cause: "+oneLine(cause))
	}
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

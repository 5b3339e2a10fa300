// Package console is latchkey serve's read-only web console: server-rendered
// pages (html/template) under /ui/ and the same data as JSON under /-/api/,
// read straight from the engine one page at a time (no view reads more than
// Options.PageSize records; the records of s3:// stores kept in a bucket
// are read through Options.S3Object, as GET serves them, so SSE-S3 objects
// decrypt), with every asset embedded (the charts are a
// vendored uPlot) and a strict Content-Security-Policy. The pages work
// without JavaScript; app.js only adds the overview's live charts and a
// quiet refresh of the locks and sessions pages.
//
// The console never shows what the caller could not read through the API
// itself (auth.go): when the server has an ACL token or S3 credentials,
// every page and answer needs a login, Consul data needs the ACL token and
// S3 data an access key with its secret (or a SigV4-signed request). A
// login starts an in-memory session (sessions.go) that names what it
// proved and never the secret; login attempts are rate-limited per client
// address (ratelimit.go). See docs/console.md and docs/security.md.
package console

// Package console is latchkey serve's read-only web console: server-rendered
// pages (html/template) under /ui/ and the same data as JSON under /-/api/,
// read straight from the engine one page at a time (no view reads more than
// Options.PageSize records), with every asset embedded (the charts are a
// vendored uPlot) and a strict Content-Security-Policy. The pages work
// without JavaScript; app.js only adds the overview's live charts and a
// quiet refresh of the locks and sessions pages. When the server has an ACL
// token, every page and answer needs it (login cookie, X-Consul-Token or
// Authorization: Bearer). See docs/console.md.
package console

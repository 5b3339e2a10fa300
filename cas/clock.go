package cas

import "time"

// now is the clock of every wait, backoff and timeout in this package:
// time.Now, whose readings carry the monotonic clock, so that durations
// measured between two of them (Sub, never UnixNano or a reading that went
// through a record) are immune to steps of the system's wall clock. Tests
// replace it with a clock that steps the wall clock (internal/clocktest).
var now = time.Now

package main

import "strings"

// The kv subcommands' help after their flags (see helpText): what each
// does in a short paragraph, examples, and its exit codes. kv --help
// (kvUsage) has the whole family.

// kvReadExits are the exit codes of the kv subcommands that only read.
const kvReadExits = `  0   done
  1   no such key, or an error
  2   bad command line
`

// kvWriteExits are the exit codes of the kv subcommands that write.
const kvWriteExits = `  0   written
  1   not applied (-cas: the key changed), or an error; nothing written
  2   bad command line (-modify-index=abc on a store with numeric versions)
  74  the write was sent but never answered: it may or may not have
      applied; read the key before retrying
`

var kvHelps = map[string]helpText{
	"get": {
		about: `Prints KEY's value byte for byte, adding no newline (-base64: base64 and a
newline; -detailed: Consul's field layout, with the ModifyIndex that -cas
takes; -recurse: every key under the prefix).`,
		examples: `  latchkey kv get app/config
  latchkey kv get -detailed app/config
`,
		exits: kvReadExits,
	},
	"put": {
		about: `Writes VALUE to KEY. VALUE "-" reads stdin (at most 64 MiB), "@FILE" reads
FILE, "@@TEXT" is the literal "@TEXT". With -cas -modify-index=VERSION it
writes only if KEY is still at VERSION (0: only if absent); with -fenced,
only if no newer fencing token has written it.`,
		examples: `  latchkey kv put app/config v2
  latchkey kv put app/config - < config.json
  latchkey kv put -cas -modify-index=17 app/config v3
`,
		exits: kvWriteExits,
	},
	"update": {
		about: `Runs CMD with KEY's value on CMD's stdin (empty when KEY is absent) and
writes CMD's stdout back, exactly as printed, only if KEY is unchanged;
otherwise reads KEY again and reruns CMD, backing off, for up to
-max-time. kv update reads nothing from its own stdin: CMD's stdin is the
value. CMD's stderr is ours; CMD failing writes nothing.`,
		examples: `  latchkey kv update counters/visits -- sh -c 'n=$(cat); echo $((${n:-0}+1))'
  latchkey kv update -max-time 5s app/config -- jq '.replicas = 3'
`,
		exits: `  0   written
  1   gave up: too contended for -max-time or -max-attempts, or the store
      failed for -max-time; nothing written
  2   bad command line
  74  the write was sent but never answered: it may or may not have
      applied; check with kv get before retrying
  N   CMD exited N (a signal: 1); nothing written
`,
	},
	"delete": {
		about: `Deletes KEY (-recurse: every key under the prefix). With -cas
-modify-index=VERSION it deletes only if KEY is still at VERSION.`,
		examples: `  latchkey kv delete app/config
  latchkey kv delete -recurse app/
`,
		exits: kvWriteExits,
	},
}

// kvHelp is the help tail of kv subcommand name, whose summary is
// summary.
func kvHelp(name, summary string) string {
	h, ok := kvHelps[name]
	if !ok {
		exits := kvReadExits
		if name == "txn" || name == "import" {
			exits = kvWriteExits
		}
		h = helpText{about: strings.ToUpper(summary[:1]) + summary[1:] + ".", exits: exits}
	}
	h.more = "latchkey kv --help, for the whole family"
	return h.tail()
}

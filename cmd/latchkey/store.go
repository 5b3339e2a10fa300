package main

import (
	"context"
	"flag"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/storeurl"
)

// storeEnv is the environment variable naming the store when --store is
// not given.
const storeEnv = "LATCHKEY_STORE"

const storeFlagHelp = "store `URL`: mem://, file:///dir, ... (default $LATCHKEY_STORE, else the directory store in $XDG_STATE_HOME/latchkey/store or ~/.local/state/latchkey/store)"

// addStoreFlag registers --store on fs; pass its value to openStore.
func addStoreFlag(fs *flag.FlagSet) *string {
	return fs.String("store", "", storeFlagHelp)
}

// storeURL picks the store: the command's --store flag, else latchkey's
// own (latchkey --store URL COMMAND), else $LATCHKEY_STORE, else the
// default directory store.
func storeURL(e *env, flagURL string) (string, error) {
	if flagURL != "" {
		return flagURL, nil
	}
	if e.store != "" {
		return e.store, nil
	}
	if u := e.getenv(storeEnv); u != "" {
		return u, nil
	}
	return storeurl.DefaultURL(e.getenv)
}

// openStore opens the store chosen by storeURL. The caller closes it.
func openStore(ctx context.Context, e *env, flagURL string) (store.Store, error) {
	u, err := storeURL(e, flagURL)
	if err != nil {
		return nil, err
	}
	return storeurl.Open(ctx, u)
}

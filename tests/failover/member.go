package failover

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// memberEnv carries a member's configuration (JSON) to the child process.
const memberEnv = "LATCHKEY_FAILOVER_MEMBER"

// memberConfig is what one member process needs to start.
type memberConfig struct {
	Name           string
	Dir            string
	ClientURL      string
	PeerURL        string // listened on
	AdvertisePeer  string // told to the others (its peer proxy)
	InitialCluster string
	Fsync          bool
	TickMs         uint
	ElectionMs     uint
}

// RunMemberIfChild runs one etcd member and exits, when this process was
// started by a Cluster as a member; otherwise it returns at once. Call it
// first in TestMain.
func RunMemberIfChild() {
	env := os.Getenv(memberEnv)
	if env == "" {
		return
	}
	var c memberConfig
	if err := json.Unmarshal([]byte(env), &c); err != nil {
		fmt.Fprintln(os.Stderr, "failover member:", err)
		os.Exit(2)
	}
	if err := runMember(c); err != nil {
		fmt.Fprintln(os.Stderr, "failover member:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// runMember serves until etcd fails or stdin closes (the parent is gone).
func runMember(c memberConfig) error {
	cfg := embed.NewConfig()
	cfg.Name = c.Name
	cfg.Dir = c.Dir
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	cu, err := url.Parse(c.ClientURL)
	if err != nil {
		return err
	}
	pu, err := url.Parse(c.PeerURL)
	if err != nil {
		return err
	}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*cu}, []url.URL{*cu}
	au := pu
	if c.AdvertisePeer != "" {
		if au, err = url.Parse(c.AdvertisePeer); err != nil {
			return err
		}
	}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*pu}, []url.URL{*au}
	cfg.InitialCluster = c.InitialCluster
	cfg.InitialClusterToken = "latchkey-failover"
	cfg.UnsafeNoFsync = !c.Fsync
	cfg.TickMs, cfg.ElectionMs = c.TickMs, c.ElectionMs
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return err
	}
	defer e.Close()
	parentGone := make(chan struct{})
	go func() {
		io.Copy(io.Discard, os.Stdin)
		close(parentGone)
	}()
	select {
	case err := <-e.Err():
		return err
	case <-parentGone:
		return nil
	case <-time.After(24 * time.Hour):
		return fmt.Errorf("still running after a day")
	}
}

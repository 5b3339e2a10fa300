package server

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	consul "github.com/hashicorp/consul/api"

	"github.com/latchkey/latchkey/server/internal/consulmodel"
	"github.com/latchkey/latchkey/server/internal/engine"
)

// BenchmarkS3PutWithKVRootWatchers measures S3 PUTs while 50 Consul
// blocking queries watch the whole KV root (GET /v1/kv/?recurse&index=N)
// over 20k keys, everything through the real handlers. An S3 write touches
// no KV key, so it must wake none of them; if it did, each PUT would cost
// 50 re-reads of 20k entries. Reports the process CPU time per PUT
// (cpu-ms/op: server and clients, which share the process) next to the
// wall time of one PUT.
//
//	go test -run '^$' -bench S3PutWithKVRootWatchers -benchtime 100x ./server
func BenchmarkS3PutWithKVRootWatchers(b *testing.B) {
	for _, watchers := range []int{0, 50} {
		b.Run(fmt.Sprintf("watchers=%d", watchers), func(b *testing.B) {
			benchS3PutWithWatchers(b, watchers, 20000)
		})
	}
}

func benchS3PutWithWatchers(b *testing.B, watchers, keys int) {
	const ak, sk = "BENCHACCESSKEY", "bench-secret-key-0123456789"
	srv, err := New(Config{DataDir: b.TempDir(), NoSync: true, AccessKey: ak, SecretKey: sk, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	addr, stop := serveLoopback(b, srv)
	defer stop()
	ctx := context.Background()
	for i := 0; i < keys; i += 1000 {
		if _, err := srv.engine.Update(ctx, func(tx *engine.Tx) error {
			for j := i; j < min(i+1000, keys); j++ {
				consulmodel.Put(tx, consulmodel.KV{Key: fmt.Sprintf("app/%06d", j), Value: []byte("value")})
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
	cfg := consul.DefaultConfig()
	cfg.Address = addr
	cfg.Transport.MaxIdleConnsPerHost = watchers + 1
	cc, err := consul.NewClient(cfg)
	if err != nil {
		b.Fatal(err)
	}
	_, meta, err := cc.KV().List("", nil)
	if err != nil {
		b.Fatal(err)
	}
	qctx, qcancel := context.WithCancel(ctx)
	defer qcancel()
	answered := make(chan struct{}, watchers)
	for range watchers {
		go func() {
			idx := meta.LastIndex
			for qctx.Err() == nil {
				_, m, err := cc.KV().List("", (&consul.QueryOptions{WaitIndex: idx, WaitTime: 10 * time.Minute}).WithContext(qctx))
				if err != nil {
					return
				}
				idx = m.LastIndex
				answered <- struct{}{}
			}
		}()
	}
	for srv.apis.consulStats().BlockingQueries < watchers { // every query is in the handler
		time.Sleep(time.Millisecond)
	}

	s3c := s3.New(s3.Options{
		BaseEndpoint: aws.String("http://" + addr), Region: "us-east-1", UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(ak, sk, ""),
	})
	if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("bkt")}); err != nil {
		b.Fatal(err)
	}
	body := bytes.Repeat([]byte("x"), 1024)
	cpu0 := cpuTime()
	b.ResetTimer()
	for i := range b.N {
		if _, err := s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String(fmt.Sprintf("obj/%d", i)),
			Body: bytes.NewReader(body)}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
	if len(answered) > 0 {
		b.Fatalf("%d blocking KV queries answered although no KV key changed", len(answered))
	}
	qcancel()
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

package s3interop

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/latchkey/latchkey/internal/testutil"
	"github.com/latchkey/latchkey/server"
	"github.com/latchkey/latchkey/server/servertest"
)

// tlsServer starts our server with a fresh self-signed certificate for
// 127.0.0.1 and returns it with an HTTP client that trusts it.
func tlsServer(t *testing.T) (*servertest.Server, *http.Client) {
	t.Helper()
	srv, hc, _ := tlsServerWith(t, server.Config{})
	return srv, hc
}

// tlsServerWith is tlsServer with a server configuration (TLSCert and
// TLSKey are filled in); it also returns the certificate's PEM file.
func tlsServerWith(t *testing.T, cfg server.Config) (*servertest.Server, *http.Client, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "latchkey test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	cfg.TLSCert, cfg.TLSKey = certFile, keyFile
	srv := servertest.Start(t, &servertest.Options{Config: cfg})
	if !strings.HasPrefix(srv.URL, "https://") {
		t.Fatalf("server URL %s is not https", srv.URL)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool}
	return srv, &http.Client{Transport: tr}, certFile
}

// TestTLSTrailingChecksums: over https the SDK's default is an unsigned
// aws-chunked body with a trailing CRC32 (and minio-go with
// TrailingHeaders sends the same mode); PutObject, UploadPart and reads
// work, for each checksum algorithm.
func TestTLSTrailingChecksums(t *testing.T) {
	srv, hc := tlsServer(t)
	ctx := context.Background()
	c := sdkClient(t, srv, srv.AccessKey, srv.SecretKey)
	c = s3.New(c.Options(), func(o *s3.Options) { o.HTTPClient = hc })
	bucket := testutil.RandomName("tls-")
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &bucket}); err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("trailer!"), 40000)
	for _, alg := range []types.ChecksumAlgorithm{"", types.ChecksumAlgorithmCrc32c, types.ChecksumAlgorithmSha256, types.ChecksumAlgorithmCrc64nvme} {
		key := "obj-" + string(alg)
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader(data), ChecksumAlgorithm: alg}); err != nil {
			t.Fatalf("PutObject %q over https: %v", alg, err)
		}
		out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: &key})
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(out.Body)
		out.Body.Close()
		if !bytes.Equal(got, data) {
			t.Fatalf("%q: read back %d bytes", alg, len(got))
		}
	}
	// A non-seekable body: only possible with the trailer over https.
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: aws.String("pipe"), ContentLength: aws.Int64(int64(len(data))),
		Body: io.MultiReader(bytes.NewReader(data[:10]), bytes.NewReader(data[10:])), IfNoneMatch: aws.String("*")}); err != nil {
		t.Fatalf("streamed PutObject over https: %v", err)
	}
	id, part := uploadCRC32Part(t, c, bucket, "mpu", data)
	if _, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: &bucket, Key: aws.String("mpu"), UploadId: id,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{part}},
		IfNoneMatch:     aws.String("*")}); err != nil {
		t.Fatalf("CompleteMultipartUpload over https: %v", err)
	}

	host := strings.TrimPrefix(srv.URL, "https://")
	mc, err := minio.New(host, &minio.Options{Creds: credentials.NewStaticV4(srv.AccessKey, srv.SecretKey, ""), Secure: true,
		Region: "us-east-1", BucketLookup: minio.BucketLookupPath, TrailingHeaders: true, Transport: hc.Transport})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mc.PutObject(ctx, bucket, "minio", bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{Checksum: minio.ChecksumCRC32C}); err != nil {
		t.Fatalf("minio-go PutObject over https with a trailer: %v", err)
	}
	st, err := mc.StatObject(ctx, bucket, "minio", minio.StatObjectOptions{})
	if err != nil || st.Size != int64(len(data)) {
		t.Fatalf("stat: %v %v", st.Size, err)
	}
}

package s3api

import (
	"encoding/base64"
	"encoding/xml"
	"fmt"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/server/internal/s3api/sigv4"
)

// stateOf renders everything a request could have changed: the engine's
// committed index (every committed change consumes one), the blob files,
// and, over HTTP, the buckets with their versioning state, every version
// and delete marker, every upload and its parts.
func (s *testServer) stateOf() string {
	s.t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "index=%d blobs=%d\n", s.e.Index(), countBlobs(s.t, s))
	var lb struct {
		Buckets []struct{ Name string } `xml:"Buckets>Bucket"`
	}
	body := s.mustDo(200, "GET", "/", nil).Body
	b.Write(body)
	if err := xml.Unmarshal(body, &lb); err != nil {
		s.t.Fatal(err)
	}
	for _, bk := range lb.Buckets {
		for _, q := range []string{"?versioning", "?versions", "?uploads"} {
			b.Write(s.mustDo(200, "GET", "/"+bk.Name+q, nil).Body)
		}
		var ups struct {
			Upload []struct{ Key, UploadId string }
		}
		_ = xml.Unmarshal(s.mustDo(200, "GET", "/"+bk.Name+"?uploads", nil).Body, &ups)
		for _, u := range ups.Upload {
			b.Write(s.mustDo(200, "GET", "/"+bk.Name+"/"+u.Key+"?uploadId="+u.UploadId, nil).Body)
		}
	}
	return b.String()
}

// TestBadInputChangesNothing: every malformed or refused request gets the
// error code AWS sends, and the server's state (engine index, blobs,
// buckets, versions, uploads, parts) is exactly what it was before.
func TestBadInputChangesNothing(t *testing.T) {
	s := newTestServer(t, nil) // minimum part size 5 bytes
	s.bucket("bad")
	s.versionedBucket("vbad")
	etK := s.put("/bad/k", "value")
	big := strings.Repeat("B", inlineMax+1)
	s.put("/bad/big", big)
	s.put("/vbad/gone", "x")
	s.mustDo(204, "DELETE", "/vbad/gone", nil)
	m := s.createMPU("/bad/mp")
	m.part(1, "ab") // too small to be any but the last part
	m.part(2, "cd")
	up := "/bad/mp?uploadId=" + m.id
	partPath := func(n string) string { return "/bad/mp?partNumber=" + n + "&uploadId=" + m.id }
	badMD5 := base64.StdEncoding.EncodeToString(make([]byte, 16))
	bigMeta := strings.Repeat("m", MaxUserMetadata-2) // with the name "big": 1 byte over

	var keys1001 strings.Builder
	keys1001.WriteString("<Delete><Object><Key>k</Key></Object>")
	for i := range 1000 {
		fmt.Fprintf(&keys1001, "<Object><Key>x%d</Key></Object>", i)
	}
	keys1001.WriteString("</Delete>")
	oversizedXML := "<Delete><Object><Key>k</Key></Object>" + strings.Repeat(" ", maxXMLBody) + "</Delete>"
	complete := func(parts ...string) string {
		var b strings.Builder
		b.WriteString("<CompleteMultipartUpload>")
		for _, p := range parts {
			b.WriteString("<Part>" + p + "</Part>")
		}
		b.WriteString("</CompleteMultipartUpload>")
		return b.String()
	}
	part := func(n int) string { return fmt.Sprintf("<PartNumber>%d</PartNumber><ETag>%s</ETag>", n, m.etags[n]) }

	cases := []refusal{
		// Malformed XML.
		{"versioning: truncated XML", "PUT", "/bad?versioning", "<Versioning", nil, 400, "MalformedXML"},
		{"versioning: unknown status", "PUT", "/bad?versioning", "<VersioningConfiguration><Status>On</Status></VersioningConfiguration>", nil, 400, "MalformedXML"},
		{"versioning: wrong root element", "PUT", "/bad?versioning", "<Foo><Status>Enabled</Status></Foo>", nil, 400, "MalformedXML"},
		{"create bucket: malformed configuration", "PUT", "/newbucket", "<CreateBucketConfiguration>", nil, 400, "MalformedXML"},
		{"delete objects: truncated XML", "POST", "/bad?delete", "<Delete><Object><Key>k</Key>", nil, 400, "MalformedXML"},
		{"delete objects: no objects", "POST", "/bad?delete", "<Delete></Delete>", nil, 400, "MalformedXML"},
		{"delete objects: 1001 keys", "POST", "/bad?delete", keys1001.String(), nil, 400, "MalformedXML"},
		{"delete objects: body over the XML limit", "POST", "/bad?delete", oversizedXML, nil, 400, "MalformedXML"},
		{"delete objects: bad Content-MD5", "POST", "/bad?delete", "<Delete><Object><Key>k</Key></Object></Delete>", []string{"Content-MD5", badMD5}, 400, "BadDigest"},
		{"complete: truncated XML", "POST", up, "<CompleteMultipartUpload><Part>", nil, 400, "MalformedXML"},
		{"complete: non-numeric part number", "POST", up, complete("<PartNumber>one</PartNumber><ETag>x</ETag>"), nil, 400, "MalformedXML"},
		{"complete: no parts", "POST", up, complete(), nil, 400, "MalformedXML"},
		{"complete: parts out of order", "POST", up, complete(part(2), part(1)), nil, 400, "InvalidPartOrder"},
		{"complete: unknown part", "POST", up, complete(part(1), "<PartNumber>3</PartNumber><ETag>\"00\"</ETag>"), nil, 400, "InvalidPart"},
		{"complete: small non-last part", "POST", up, complete(part(1), part(2)), nil, 400, "EntityTooSmall"},
		{"complete: If-Match on a missing key", "POST", up, complete(part(2)), []string{"If-Match", etK}, 404, "NoSuchKey"},
		{"complete: If-Match *", "POST", up, complete(part(2)), []string{"If-Match", "*"}, 501, "NotImplemented"},
		{"complete: bad Content-MD5", "POST", up, complete(part(2)), []string{"Content-MD5", badMD5}, 400, "BadDigest"},
		// Bad bucket names.
		{"bucket name: upper case and underscore", "PUT", "/Bad_Name", "", nil, 400, "InvalidBucketName"},
		{"bucket name: too short", "PUT", "/ab", "", nil, 400, "InvalidBucketName"},
		{"bucket name: too long", "PUT", "/" + strings.Repeat("a", 64), "", nil, 400, "InvalidBucketName"},
		{"bucket name: leading dash", "PUT", "/-abc", "", nil, 400, "InvalidBucketName"},
		{"bucket name: IP address", "PUT", "/192.168.5.4", "", nil, 400, "InvalidBucketName"},
		{"bucket name: double dot", "PUT", "/a..b", "", nil, 400, "InvalidBucketName"},
		{"bucket name: xn-- prefix", "PUT", "/xn--abc", "", nil, 400, "InvalidBucketName"},
		{"bucket name: object PUT", "PUT", "/Bad_Name/k", "x", nil, 400, "InvalidBucketName"},
		// Bad part numbers.
		{"part number 0", "PUT", partPath("0"), "x", nil, 400, "InvalidArgument"},
		{"part number 10001", "PUT", partPath("10001"), "x", nil, 400, "InvalidArgument"},
		{"part number not a number", "PUT", partPath("one"), "x", nil, 400, "InvalidArgument"},
		{"part without a number", "PUT", up, "x", nil, 400, "InvalidArgument"},
		{"part of an unknown upload", "PUT", "/bad/mp?partNumber=1&uploadId=nope", "x", nil, 404, "NoSuchUpload"},
		{"part with bad Content-MD5", "PUT", partPath("3"), "xyz", []string{"Content-MD5", badMD5}, 400, "BadDigest"},
		{"GET partNumber 0", "GET", "/bad/k?partNumber=0", "", nil, 400, "InvalidArgument"},
		{"GET partNumber past the parts", "GET", "/bad/k?partNumber=2", "", nil, 416, "InvalidPartNumber"},
		// Bad ranges.
		{"GET range past the end", "GET", "/bad/k", "", []string{"Range", "bytes=5-"}, 416, "InvalidRange"},
		{"part copy: range past the source", "PUT", partPath("3"), "", []string{"x-amz-copy-source", "/bad/k", "x-amz-copy-source-range", "bytes=0-5"}, 400, "InvalidArgument"},
		{"part copy: malformed range", "PUT", partPath("3"), "", []string{"x-amz-copy-source", "/bad/k", "x-amz-copy-source-range", "bytes=3"}, 400, "InvalidArgument"},
		{"part copy: reversed range", "PUT", partPath("3"), "", []string{"x-amz-copy-source", "/bad/k", "x-amz-copy-source-range", "bytes=3-1"}, 400, "InvalidArgument"},
		// Oversized metadata, on every operation that takes it.
		{"metadata: PutObject", "PUT", "/bad/new", "x", []string{"x-amz-meta-big", bigMeta}, 400, "MetadataTooLarge"},
		{"metadata: CreateMultipartUpload", "POST", "/bad/new?uploads", "", []string{"x-amz-meta-big", bigMeta}, 400, "MetadataTooLarge"},
		{"metadata: CopyObject REPLACE", "PUT", "/bad/new", "", []string{"x-amz-copy-source", "/bad/k", "x-amz-metadata-directive", "REPLACE", "x-amz-meta-big", bigMeta}, 400, "MetadataTooLarge"},
		{"metadata: two headers summing over", "PUT", "/bad/new", "x", []string{"x-amz-meta-a", strings.Repeat("a", 1100), "x-amz-meta-b", strings.Repeat("b", 1100)}, 400, "MetadataTooLarge"},
		// Bodies and digests.
		{"overwrite with bad Content-MD5", "PUT", "/bad/k", "other", []string{"Content-MD5", badMD5}, 400, "BadDigest"},
		{"large overwrite with bad Content-MD5", "PUT", "/bad/big", big + "x", []string{"Content-MD5", badMD5}, 400, "BadDigest"},
		{"invalid Content-MD5", "PUT", "/bad/k", "other", []string{"Content-MD5", "not-base64"}, 400, "InvalidDigest"},
		{"PUT with a wrong x-amz-checksum-crc32", "PUT", "/bad/k", "other", []string{"x-amz-checksum-crc32", checksumOf("crc32", "nope")}, 400, "BadDigest"},
		{"large PUT with a wrong x-amz-checksum-crc64nvme", "PUT", "/bad/big", big + "x", []string{"x-amz-checksum-crc64nvme", checksumOf("crc64nvme", "nope")}, 400, "BadDigest"},
		{"PUT with a malformed checksum", "PUT", "/bad/k", "other", []string{"x-amz-checksum-sha256", "AAAA"}, 400, "InvalidRequest"},
		{"PUT with two checksums", "PUT", "/bad/k", "other", []string{"x-amz-checksum-crc32", checksumOf("crc32", "other"), "x-amz-checksum-sha1", checksumOf("sha1", "other")}, 400, "InvalidRequest"},
		{"part with a wrong x-amz-checksum-crc32c", "PUT", partPath("3"), "xyz", []string{"x-amz-checksum-crc32c", checksumOf("crc32c", "xy")}, 400, "BadDigest"},
		{"delete objects with a wrong x-amz-checksum-sha256", "POST", "/bad?delete", "<Delete><Object><Key>k</Key></Object></Delete>", []string{"x-amz-checksum-sha256", checksumOf("sha256", "<Delete/>")}, 400, "BadDigest"},
		{"key not UTF-8: PUT", "PUT", "/bad/h%FF", "x", nil, 400, "InvalidURI"},
		{"key not UTF-8: multipart", "POST", "/bad/%AE%8A-?uploads", "", nil, 400, "InvalidURI"},
		{"key not UTF-8: copy source", "PUT", "/bad/new", "", []string{"x-amz-copy-source", "/bad/k%FF"}, 400, "InvalidURI"},
		{"key not UTF-8: GET", "GET", "/bad/%AE%8A-", "", nil, 400, "InvalidURI"},
		// Without a master key SSE-S3 is refused, never pretended; KMS and
		// SSE-C get AWS's answers for a missing key and a blocked bucket.
		{"SSE-S3 PUT without a master key", "PUT", "/bad/new", "x", []string{"x-amz-server-side-encryption", "AES256"}, 501, "NotImplemented"},
		{"SSE-KMS PUT", "PUT", "/bad/k", "x", []string{"x-amz-server-side-encryption", "aws:kms", "x-amz-server-side-encryption-aws-kms-key-id", "k1"}, 400, "KMS.NotFoundException"},
		{"SSE unknown method", "PUT", "/bad/new", "x", []string{"x-amz-server-side-encryption", "AES512"}, 400, "InvalidArgument"},
		{"SSE-S3 multipart without a master key", "POST", "/bad/new?uploads", "", []string{"x-amz-server-side-encryption", "AES256"}, 501, "NotImplemented"},
		{"SSE-S3 copy without a master key", "PUT", "/bad/new", "", []string{"x-amz-copy-source", "/bad/k", "x-amz-server-side-encryption", "AES256"}, 501, "NotImplemented"},
		{"SSE-C PUT", "PUT", "/bad/new", "x", []string{"x-amz-server-side-encryption-customer-algorithm", "AES256"}, 403, "AccessDenied"},
		{"SSE-C part", "PUT", partPath("3"), "xyz", []string{"x-amz-server-side-encryption-customer-algorithm", "AES256"}, 400, "InvalidRequest"},
		{"SSE-S3 part", "PUT", partPath("3"), "xyz", []string{"x-amz-server-side-encryption", "AES256"}, 400, "InvalidArgument"},
		{"SSE-C GET of an unencrypted object", "GET", "/bad/k", "", []string{"x-amz-server-side-encryption-customer-algorithm", "AES256"}, 400, "InvalidRequest"},
		{"multipart: unknown checksum algorithm", "POST", "/bad/new?uploads", "", []string{"x-amz-checksum-algorithm", "MD4"}, 400, "InvalidRequest"},
		{"multipart: SHA256 full-object", "POST", "/bad/new?uploads", "", []string{"x-amz-checksum-algorithm", "SHA256", "x-amz-checksum-type", "FULL_OBJECT"}, 400, "InvalidRequest"},
		{"multipart: CRC64NVME composite", "POST", "/bad/new?uploads", "", []string{"x-amz-checksum-algorithm", "CRC64NVME", "x-amz-checksum-type", "COMPOSITE"}, 400, "InvalidRequest"},
		{"multipart: checksum type alone", "POST", "/bad/new?uploads", "", []string{"x-amz-checksum-type", "COMPOSITE"}, 400, "InvalidRequest"},
		{"attributes: none asked", "GET", "/bad/k?attributes", "", nil, 400, "InvalidArgument"},
		{"attributes: unknown", "GET", "/bad/k?attributes", "", []string{"x-amz-object-attributes", "ETag,Colour"}, 400, "InvalidArgument"},
		{"key too long", "PUT", "/bad/" + strings.Repeat("k", MaxKeyLength+1), "x", nil, 400, "KeyTooLongError"},
		// Preconditions.
		{"PUT If-None-Match * over an object", "PUT", "/bad/k", "other", []string{"If-None-Match", "*"}, 412, "PreconditionFailed"},
		{"PUT If-Match stale", "PUT", "/bad/k", "other", []string{"If-Match", `"0123"`}, 412, "PreconditionFailed"},
		{"PUT If-Match missing key", "PUT", "/bad/none", "other", []string{"If-Match", etK}, 404, "NoSuchKey"},
		{"PUT If-Match over a delete marker", "PUT", "/vbad/gone", "other", []string{"If-Match", etK}, 404, "NoSuchKey"},
		{"PUT If-Match *", "PUT", "/bad/k", "other", []string{"If-Match", "*"}, 501, "NotImplemented"},
		{"PUT If-None-Match etag", "PUT", "/bad/k", "other", []string{"If-None-Match", etK}, 501, "NotImplemented"},
		{"copy If-None-Match * over an object", "PUT", "/bad/big", "", []string{"x-amz-copy-source", "/bad/k", "If-None-Match", "*"}, 412, "PreconditionFailed"},
		{"copy source If-None-Match matching", "PUT", "/bad/new", "", []string{"x-amz-copy-source", "/bad/k", "x-amz-copy-source-if-none-match", etK}, 412, "PreconditionFailed"},
		{"DELETE If-Match stale", "DELETE", "/bad/k", "", []string{"If-Match", `"0123"`}, 412, "PreconditionFailed"},
		{"DELETE If-Match missing key", "DELETE", "/bad/none", "", []string{"If-Match", "*"}, 404, "NoSuchKey"},
		{"DELETE If-Match under a marker", "DELETE", "/vbad/gone", "", []string{"If-Match", "*"}, 404, "NoSuchKey"},
		{"DELETE x-amz-if-match-size", "DELETE", "/bad/k", "", []string{"x-amz-if-match-size", "5"}, 501, "NotImplemented"},
		// Other refusals.
		{"DELETE bad version id", "DELETE", "/bad/k?versionId=zzz", "", nil, 400, "InvalidArgument"},
		{"copy: malformed source", "PUT", "/bad/new", "", []string{"x-amz-copy-source", "bad"}, 400, "InvalidArgument"},
		{"copy: unknown directive", "PUT", "/bad/new", "", []string{"x-amz-copy-source", "/bad/k", "x-amz-metadata-directive", "MOVE"}, 400, "InvalidArgument"},
		{"copy: to itself without REPLACE", "PUT", "/bad/k", "", []string{"x-amz-copy-source", "/bad/k"}, 400, "InvalidRequest"},
		{"delete a non-empty bucket", "DELETE", "/bad", "", nil, 409, "BucketNotEmpty"},
		{"abort an unknown upload", "DELETE", "/bad/mp?uploadId=nope", "", nil, 404, "NoSuchUpload"},
		{"put into a missing bucket", "PUT", "/nobucket/k", "x", nil, 404, "NoSuchBucket"},
		{"multipart in a missing bucket", "POST", "/nobucket/k?uploads", "", nil, 404, "NoSuchBucket"},
		{"versioning of a missing bucket", "PUT", "/nobucket?versioning", "<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>", nil, 404, "NoSuchBucket"},
		{"list with negative max-keys", "GET", "/bad?list-type=2&max-keys=-1", "", nil, 400, "InvalidArgument"},
		{"list with unknown encoding", "GET", "/bad?list-type=2&encoding-type=xml", "", nil, 400, "InvalidArgument"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := s.stateOf()
			tc.check(t, s)
			if after := s.stateOf(); after != before {
				t.Fatalf("state changed:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
	// The state the bad requests left alone is still usable.
	if g := s.mustDo(200, "GET", "/bad/k", nil); string(g.Body) != "value" {
		t.Fatalf("k: %q", g.Body)
	}
	if r := m.complete(nil, 2); r.Status != 200 {
		t.Fatalf("the upload survived the bad requests: %d %s", r.Status, r.Body)
	}
}

// checksumOf is the x-amz-checksum-<alg> header value of body.
func checksumOf(alg, body string) string {
	h := sigv4.NewChecksumHash(alg)
	h.Write([]byte(body))
	return base64.StdEncoding.EncodeToString(h.Sum(nil))
}

// TestBodyChecksums: correct x-amz-checksum-* values pass, for unsigned
// PUT and UploadPart bodies and for DeleteObjects (signed or not).
func TestBodyChecksums(t *testing.T) {
	s := newTestServer(t, nil)
	s.bucket("sum")
	for _, alg := range sigv4.ChecksumAlgorithms {
		s.put("/sum/"+alg, "payload-"+alg, "x-amz-checksum-"+alg, checksumOf(alg, "payload-"+alg))
	}
	big := strings.Repeat("q", inlineMax+7)
	s.put("/sum/big", big, "x-amz-checksum-crc32c", checksumOf("crc32c", big))
	m := s.createMPU("/sum/mp")
	s.mustDo(200, "PUT", "/sum/mp?partNumber=1&uploadId="+m.id, []byte("part"), "x-amz-checksum-crc32", checksumOf("crc32", "part"))
	del := "<Delete><Object><Key>crc32</Key></Object></Delete>"
	r := s.mustDo(200, "POST", "/sum?delete", []byte(del), "x-amz-checksum-crc32", checksumOf("crc32", del))
	if !strings.Contains(string(r.Body), "<Deleted><Key>crc32</Key>") {
		t.Fatalf("delete objects: %s", r.Body)
	}
	// Signed: the verifier leaves DeleteObjects' checksum to the handler.
	a := signedServer(t, false)
	a.send(testAK, testSK, "PUT", "/sig", nil).mustStatus(t, 200)
	a.send(testAK, testSK, "PUT", "/sig/k", []byte("v")).mustStatus(t, 200)
	del = "<Delete><Object><Key>k</Key></Object></Delete>"
	if r := a.send(testAK, testSK, "POST", "/sig?delete", []byte(del), "x-amz-checksum-crc32", checksumOf("crc32", "other")); r.Status != 400 || r.err().Code != "BadDigest" {
		t.Fatalf("signed delete objects with a wrong checksum: %d %s", r.Status, r.Body)
	}
	a.send(testAK, testSK, "GET", "/sig/k", nil).mustStatus(t, 200)
	a.send(testAK, testSK, "POST", "/sig?delete", []byte(del), "x-amz-checksum-crc32", checksumOf("crc32", del)).mustStatus(t, 200)
	a.send(testAK, testSK, "GET", "/sig/k", nil).mustStatus(t, 404)
}

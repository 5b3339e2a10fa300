"""boto3 with botocore.UNSIGNED (anonymous) against a --anonymous latchkey
server over https.

Usage: python3 boto3_anonymous.py ENDPOINT CA_BUNDLE
Prints one line per check, "PASS name" or "FAIL name: why", and exits 1
if any check failed. Over https botocore (1.43) sends PutObject bodies unsigned,
aws-chunked inside HTTP chunked transfer encoding, with a trailing checksum
and x-amz-content-sha256: STREAMING-UNSIGNED-PAYLOAD-TRAILER: each check
asserts that wire form.
"""
import sys
import uuid

from botocore import UNSIGNED

from s3checks import check, client, expect_error, finish, header

endpoint, ca_bundle = sys.argv[1:3]
s3 = client(endpoint, verify=ca_bundle, signature_version=UNSIGNED)
sent = []
s3.meta.events.register("before-send.s3.PutObject", lambda request, **kw: sent.append(dict(request.headers)))


def assert_unsigned_trailer():
    h = sent[-1]
    assert header(h, "authorization") is None, "request was signed: %r" % h
    assert "aws-chunked" in (header(h, "content-encoding") or ""), "not aws-chunked: %r" % h
    assert (header(h, "x-amz-trailer") or "").startswith("x-amz-checksum-"), "no trailer: %r" % h
    mode = header(h, "x-amz-content-sha256")
    assert mode == "STREAMING-UNSIGNED-PAYLOAD-TRAILER", "x-amz-content-sha256 %r: %r" % (mode, h)


bucket = "anon-" + uuid.uuid4().hex[:12]
s3.create_bucket(Bucket=bucket)
data = b"boto3 anonymous " * 6000  # 96 KB


@check
def unsigned_put_with_trailer():
    s3.put_object(Bucket=bucket, Key="k", Body=data, IfNoneMatch="*")
    assert_unsigned_trailer()
    got = s3.get_object(Bucket=bucket, Key="k")["Body"].read()
    assert got == data, "read back %d bytes, want %d" % (len(got), len(data))


@check
def unsigned_put_condition_still_applies():
    expect_error(lambda: s3.put_object(Bucket=bucket, Key="k", Body=b"second", IfNoneMatch="*"), 412)


@check
def unsigned_put_sha256_trailer():
    s3.put_object(Bucket=bucket, Key="sha", Body=data[:1000], ChecksumAlgorithm="SHA256")
    assert_unsigned_trailer()
    assert header(sent[-1], "x-amz-trailer") == "x-amz-checksum-sha256", sent[-1]
    got = s3.get_object(Bucket=bucket, Key="sha")["Body"].read()
    assert got == data[:1000], "read back %d bytes" % len(got)


finish()

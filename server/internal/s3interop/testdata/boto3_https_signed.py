"""boto3 with credentials against latchkey over https: botocore signs every
x-amz-* header it sends, and sends bodies unsigned (UNSIGNED-PAYLOAD, or
STREAMING-UNSIGNED-PAYLOAD-TRAILER when it adds a trailing checksum).

Usage: python3 boto3_https_signed.py ENDPOINT CA_BUNDLE ACCESS_KEY SECRET_KEY
Prints one line per check, "PASS name" or "FAIL name: why", and exits 1
if any check failed.
"""
import sys
import uuid

from s3checks import check, client, finish, header

endpoint, ca_bundle, ak, sk = sys.argv[1:5]
s3 = client(endpoint, ak, sk, verify=ca_bundle)
sent = []
s3.meta.events.register("before-send.s3.*", lambda request, **kw: sent.append(dict(request.headers)))


def assert_amz_signed():
    """Every x-amz-* header of the last request is in its SignedHeaders."""
    h = sent[-1]
    auth = header(h, "authorization") or ""
    signed = auth.split("SignedHeaders=")[1].split(",")[0].split(";")
    for k in h:
        lk = k.lower()
        if lk.startswith("x-amz-") and lk != "x-amz-content-sha256":
            assert lk in signed, "%s not signed: %r" % (lk, auth)


bucket = "https-" + uuid.uuid4().hex[:12]
s3.create_bucket(Bucket=bucket)
data = b"boto3 over https " * 4000


@check
def put_unsigned_payload_with_metadata():
    s3.put_object(Bucket=bucket, Key="src", Body=data, Metadata={"colour": "blue"}, ContentType="text/plain")
    mode = header(sent[-1], "x-amz-content-sha256")
    assert mode in ("UNSIGNED-PAYLOAD", "STREAMING-UNSIGNED-PAYLOAD-TRAILER"), "x-amz-content-sha256 %r" % mode
    assert_amz_signed()
    h = s3.head_object(Bucket=bucket, Key="src")
    assert h["Metadata"] == {"colour": "blue"}, h["Metadata"]


@check
def copy_with_replaced_metadata():
    s3.copy_object(Bucket=bucket, Key="dst", CopySource={"Bucket": bucket, "Key": "src"},
                   MetadataDirective="REPLACE", Metadata={"colour": "red"})
    assert_amz_signed()
    h = s3.head_object(Bucket=bucket, Key="dst")
    assert h["Metadata"] == {"colour": "red"}, h["Metadata"]


@check
def upload_part_copy():
    up = s3.create_multipart_upload(Bucket=bucket, Key="mp", Metadata={"m": "1"})
    assert_amz_signed()
    part = s3.upload_part_copy(Bucket=bucket, Key="mp", UploadId=up["UploadId"], PartNumber=1,
                               CopySource={"Bucket": bucket, "Key": "src"}, CopySourceRange="bytes=0-9")
    assert_amz_signed()
    s3.complete_multipart_upload(Bucket=bucket, Key="mp", UploadId=up["UploadId"],
                                 MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": part["CopyPartResult"]["ETag"]}]})
    got = s3.get_object(Bucket=bucket, Key="mp")["Body"].read()
    assert got == data[:10], got


@check
def put_with_sha256_checksum():
    s3.put_object(Bucket=bucket, Key="sum", Body=data, ChecksumAlgorithm="SHA256")
    assert_amz_signed()
    assert s3.get_object(Bucket=bucket, Key="sum")["Body"].read() == data


finish()

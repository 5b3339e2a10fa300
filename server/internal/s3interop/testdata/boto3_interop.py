"""boto3 interop checks against a latchkey server.

Usage: python3 boto3_interop.py ENDPOINT ACCESS_KEY SECRET_KEY
Prints one line per check, "PASS name" or "FAIL name: why", and exits 1
if any check failed.
"""
import sys
import threading
import urllib.request
import uuid

from botocore.exceptions import ClientError

import s3checks
from s3checks import check, code_of, expect_error, finish

endpoint, ak, sk = sys.argv[1:4]


def client(key=ak, secret=sk):
    return s3checks.client(endpoint, key, secret, signature_version="s3v4")


s3 = client()


def new_bucket():
    b = "boto-" + uuid.uuid4().hex[:12]
    s3.create_bucket(Bucket=b)
    return b


@check
def conditional_put_race():
    b = new_bucket()
    results = [None] * 16

    def put(i):
        try:
            s3.put_object(Bucket=b, Key="race", Body=b"writer %d" % i, IfNoneMatch="*")
            results[i] = (200, None)
        except ClientError as e:
            results[i] = code_of(e)

    threads = [threading.Thread(target=put, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [i for i, r in enumerate(results) if r[0] == 200]
    assert len(winners) == 1, "winners %r results %r" % (winners, results)
    for r in results:
        assert r[0] == 200 or r == (412, "PreconditionFailed") or r == (409, "ConditionalRequestConflict"), r
    body = s3.get_object(Bucket=b, Key="race")["Body"].read()
    assert body == b"writer %d" % winners[0], body


@check
def if_match_put_and_delete():
    b = new_bucket()
    e1 = s3.put_object(Bucket=b, Key="k", Body=b"1")["ETag"]
    s3.put_object(Bucket=b, Key="k", Body=b"2", IfMatch=e1)
    expect_error(lambda: s3.put_object(Bucket=b, Key="k", Body=b"3", IfMatch=e1), 412, "PreconditionFailed")
    expect_error(lambda: s3.put_object(Bucket=b, Key="nope", Body=b"3", IfMatch=e1), 404, "NoSuchKey")
    expect_error(lambda: s3.delete_object(Bucket=b, Key="k", IfMatch=e1), 412, "PreconditionFailed")
    cur = s3.head_object(Bucket=b, Key="k")["ETag"]
    s3.delete_object(Bucket=b, Key="k", IfMatch=cur)
    expect_error(lambda: s3.head_object(Bucket=b, Key="k"), 404)


@check
def multipart_if_none_match():
    b = new_bucket()

    def upload():
        mpu = s3.create_multipart_upload(Bucket=b, Key="mpu")
        parts = []
        for n, data in ((1, b"a" * (5 << 20)), (2, b"tail")):
            r = s3.upload_part(Bucket=b, Key="mpu", UploadId=mpu["UploadId"], PartNumber=n, Body=data)
            parts.append({"ETag": r["ETag"], "PartNumber": n})
        return s3.complete_multipart_upload(Bucket=b, Key="mpu", UploadId=mpu["UploadId"],
                                            MultipartUpload={"Parts": parts}, IfNoneMatch="*")

    r = upload()
    assert r["ETag"].strip('"').endswith("-2"), r["ETag"]
    expect_error(upload, 412, "PreconditionFailed")
    assert s3.head_object(Bucket=b, Key="mpu")["ContentLength"] == (5 << 20) + 4


@check
def versioning_and_delete_markers():
    b = new_bucket()
    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    v1 = s3.put_object(Bucket=b, Key="k", Body=b"one")["VersionId"]
    d = s3.delete_object(Bucket=b, Key="k")
    assert d.get("DeleteMarker") is True, d
    expect_error(lambda: s3.get_object(Bucket=b, Key="k"), 404, "NoSuchKey")
    expect_error(lambda: s3.get_object(Bucket=b, Key="k", VersionId=d["VersionId"]), 405, "MethodNotAllowed")
    s3.put_object(Bucket=b, Key="k", Body=b"two", IfNoneMatch="*")
    assert s3.get_object(Bucket=b, Key="k", VersionId=v1)["Body"].read() == b"one"
    lv = s3.list_object_versions(Bucket=b, Prefix="k")
    assert len(lv.get("Versions", [])) == 2 and len(lv.get("DeleteMarkers", [])) == 1, lv
    # Permanently delete the marker's version: the previous version stays.
    s3.delete_object(Bucket=b, Key="k", VersionId=d["VersionId"])
    assert len(s3.list_object_versions(Bucket=b, Prefix="k").get("DeleteMarkers", [])) == 0


@check
def presigned_get_and_put():
    b = new_bucket()
    put = s3.generate_presigned_url("put_object", Params={"Bucket": b, "Key": "p"}, ExpiresIn=600)
    req = urllib.request.Request(put, data=b"presigned body", method="PUT")
    with urllib.request.urlopen(req) as r:
        assert r.status == 200, r.status
    get = s3.generate_presigned_url("get_object", Params={"Bucket": b, "Key": "p"}, ExpiresIn=600)
    with urllib.request.urlopen(get) as r:
        assert r.read() == b"presigned body"
    bad = get.replace("/p?", "/q?")
    try:
        urllib.request.urlopen(bad)
        raise AssertionError("tampered presigned URL accepted")
    except urllib.error.HTTPError as e:
        assert e.code == 403 and b"SignatureDoesNotMatch" in e.read(), e.code


@check
def wrong_credentials():
    b = new_bucket()
    expect_error(lambda: client(secret="wrong").put_object(Bucket=b, Key="k", Body=b"x"), 403, "SignatureDoesNotMatch")
    expect_error(lambda: client(key="AKIAUNKNOWNKEY000000").list_objects_v2(Bucket=b), 403, "InvalidAccessKeyId")


@check
def listing_and_batch_delete():
    b = new_bucket()
    for i in range(7):
        s3.put_object(Bucket=b, Key="dir/%02d" % i, Body=b"x")
    keys = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=b, Prefix="dir/", PaginationConfig={"PageSize": 3}):
        keys += [o["Key"] for o in page.get("Contents", [])]
    assert keys == ["dir/%02d" % i for i in range(7)], keys
    r = s3.delete_objects(Bucket=b, Delete={"Objects": [{"Key": k} for k in keys]})
    assert len(r.get("Deleted", [])) == 7, r
    assert s3.list_objects_v2(Bucket=b).get("KeyCount") == 0


finish()

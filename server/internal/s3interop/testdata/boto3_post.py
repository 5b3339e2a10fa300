"""PostObject (browser form upload) checks: forms built by boto3's
generate_presigned_post, posted as a browser posts them (multipart/form-data,
the file last) with urllib3.

Usage: python3 boto3_post.py ENDPOINT ACCESS_KEY SECRET_KEY
Prints one line per check, "PASS name" or "FAIL name: why", and exits 1
if any check failed.
"""
import base64
import hashlib
import sys
import uuid
import xml.etree.ElementTree as ET

import urllib3
from botocore.exceptions import ClientError

from s3checks import check, client, finish

endpoint, ak, sk = sys.argv[1:4]
s3 = client(endpoint, ak, sk, signature_version="s3v4")
http = urllib3.PoolManager()
bucket = "post-" + uuid.uuid4().hex[:12]
s3.create_bucket(Bucket=bucket)


def post(form, data, filename="upload.bin", extra=(), after=()):
    """POSTs form fields, then extra fields, then the file, then after."""
    fields = list(form["fields"].items()) + list(extra)
    fields.append(("file", (filename, data, "application/octet-stream")))
    fields += list(after)
    body, ctype = urllib3.encode_multipart_formdata(fields)
    return http.request("POST", form["url"], body=body, headers={"Content-Type": ctype}, redirect=False)


def want(r, status, code=None, message=None):
    text = r.data.decode()
    if r.status != status:
        raise AssertionError("status %d, want %d: %s" % (r.status, status, text))
    if code or message:
        root = ET.fromstring(r.data)
        if code and root.findtext("Code") != code:
            raise AssertionError("want %s: %s" % (code, text))
        if message and not root.findtext("Message", "").startswith(message):
            raise AssertionError("want message %r: %s" % (message, text))


def exists(key):
    try:
        s3.head_object(Bucket=bucket, Key=key)
        return True
    except ClientError:
        return False


@check
def default_204_and_stored():
    form = s3.generate_presigned_post(bucket, "plain.txt", ExpiresIn=300)
    r = post(form, b"hello form")
    want(r, 204)
    etag = '"%s"' % hashlib.md5(b"hello form").hexdigest()
    if r.headers.get("ETag") != etag:
        raise AssertionError("ETag %r, want %r" % (r.headers.get("ETag"), etag))
    got = s3.get_object(Bucket=bucket, Key="plain.txt")
    if got["Body"].read() != b"hello form" or got["ContentType"] != "binary/octet-stream":
        raise AssertionError("stored %r" % got)


@check
def filename_in_key():
    form = s3.generate_presigned_post(bucket, "uploads/${filename}", ExpiresIn=300)
    want(post(form, b"png bytes", filename="photo.png"), 204)
    if s3.get_object(Bucket=bucket, Key="uploads/photo.png")["Body"].read() != b"png bytes":
        raise AssertionError("uploads/photo.png")


@check
def status_201_xml():
    form = s3.generate_presigned_post(bucket, "created", Fields={"success_action_status": "201"},
                                      Conditions=[{"success_action_status": "201"}], ExpiresIn=300)
    r = post(form, b"201")
    want(r, 201)
    root = ET.fromstring(r.data)
    if root.tag != "PostResponse" or root.findtext("Key") != "created" or root.findtext("Bucket") != bucket:
        raise AssertionError(r.data)


@check
def redirect_303():
    url = "https://app.example/done"
    form = s3.generate_presigned_post(bucket, "redir", Fields={"success_action_redirect": url},
                                      Conditions=[{"success_action_redirect": url}], ExpiresIn=300)
    r = post(form, b"go")
    want(r, 303)
    loc = r.headers.get("Location", "")
    if not loc.startswith(url + "?") or "key=redir" not in loc or "etag=%22" not in loc:
        raise AssertionError(loc)


@check
def content_type_and_meta():
    form = s3.generate_presigned_post(bucket, "typed", Fields={"Content-Type": "image/png", "x-amz-meta-owner": "ann"},
                                      Conditions=[["starts-with", "$Content-Type", "image/"], {"x-amz-meta-owner": "ann"}],
                                      ExpiresIn=300)
    want(post(form, b"img"), 204)
    h = s3.head_object(Bucket=bucket, Key="typed")
    if h["ContentType"] != "image/png" or h["Metadata"] != {"owner": "ann"}:
        raise AssertionError(h)


@check
def content_length_range():
    form = s3.generate_presigned_post(bucket, "sized", Conditions=[["content-length-range", 2, 10]], ExpiresIn=300)
    want(post(form, b"x" * 11), 400, "EntityTooLarge")
    want(post(form, b"x"), 400, "EntityTooSmall")
    if exists("sized"):
        raise AssertionError("a refused upload was stored")
    want(post(form, b"x" * 10), 204)


@check
def condition_failed():
    form = s3.generate_presigned_post(bucket, "cond", Fields={"Content-Type": "text/plain"},
                                      Conditions=[{"Content-Type": "text/plain"}], ExpiresIn=300)
    form["fields"]["Content-Type"] = "text/html"
    want(post(form, b"<p>"), 403, "AccessDenied",
         'Invalid according to Policy: Policy Condition failed: ["eq", "$Content-Type", "text/plain"]')
    if exists("cond"):
        raise AssertionError("stored")


@check
def extra_field_refused():
    form = s3.generate_presigned_post(bucket, "extra", ExpiresIn=300)
    want(post(form, b"e", extra=[("x-amz-meta-sneaky", "1")]), 403, "AccessDenied",
         "Invalid according to Policy: Extra input fields: x-amz-meta-sneaky")
    want(post(form, b"e", extra=[("x-ignore-me", "1")]), 204)


@check
def expired():
    form = s3.generate_presigned_post(bucket, "late", ExpiresIn=-5)
    want(post(form, b"late"), 403, "AccessDenied", "Invalid according to Policy: Policy expired.")


@check
def tampered():
    form = s3.generate_presigned_post(bucket, "a/${filename}", ExpiresIn=300)
    pol = base64.b64decode(form["fields"]["policy"]).replace(b'"a/"', b'""')
    form["fields"]["policy"] = base64.b64encode(pol).decode()
    want(post(form, b"t", filename="x"), 403, "SignatureDoesNotMatch")
    form = s3.generate_presigned_post(bucket, "sig", ExpiresIn=300)
    form["fields"]["x-amz-signature"] = "0" * 64
    want(post(form, b"t"), 403, "SignatureDoesNotMatch")
    if exists("a/x") or exists("sig"):
        raise AssertionError("stored")


@check
def field_after_file_ignored():
    form = s3.generate_presigned_post(bucket, "order", ExpiresIn=300)
    key = form["fields"].pop("key")
    want(post(form, b"o", after=[("key", key)]), 400, "InvalidArgument", "Bucket POST must contain a field named 'key'.")


@check
def not_multipart():
    r = http.request("POST", endpoint + "/" + bucket, body=b"a=b", headers={"Content-Type": "application/x-www-form-urlencoded"})
    want(r, 412, "PreconditionFailed")


finish()

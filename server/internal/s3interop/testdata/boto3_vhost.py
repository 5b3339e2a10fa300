"""boto3 in virtual-hosted style against a latchkey server run with
--s3-domain localhost.

Usage: python3 boto3_vhost.py http://localhost:PORT ACCESS_KEY SECRET_KEY
Prints one line per check, "PASS name" or "FAIL name: why".
BUCKET.localhost is resolved to 127.0.0.1 here, so no resolver setup is
needed; every request's Host is recorded and must be virtual-hosted.
"""
import socket
import sys
import uuid

from s3checks import check, client, finish

endpoint, ak, sk = sys.argv[1:4]
port = endpoint.rsplit(":", 1)[1]

_getaddrinfo = socket.getaddrinfo


def _resolve(host, *args, **kwargs):
    if isinstance(host, str) and host.endswith(".localhost"):
        host = "127.0.0.1"
    return _getaddrinfo(host, *args, **kwargs)


socket.getaddrinfo = _resolve

hosts = []
s3 = client(endpoint, ak, sk, addressing="virtual", signature_version="s3v4")
s3.meta.events.register("before-send.s3", lambda request, **kw: hosts.append(request.url.split("/")[2]))


bucket = "vh-" + uuid.uuid4().hex[:12]


@check
def objects_in_virtual_hosted_style():
    s3.create_bucket(Bucket=bucket)
    for key in ["plain", "v1/kv/looks-like-consul", "a b+c"]:
        s3.put_object(Bucket=bucket, Key=key, Body=b"body of " + key.encode())
        got = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
        assert got == b"body of " + key.encode(), got
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]]
    assert sorted(keys) == ["a b+c", "plain", "v1/kv/looks-like-consul"], keys
    s3.delete_object(Bucket=bucket, Key="plain")


@check
def every_request_was_virtual_hosted():
    want = "%s.localhost:%s" % (bucket, port)
    assert hosts and all(h == want for h in hosts), (want, set(hosts))


finish()

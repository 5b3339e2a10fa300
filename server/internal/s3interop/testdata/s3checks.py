"""What the boto3 check scripts share: the client, the @check decorator
that prints one line per check ("PASS name" or "FAIL name: why"), the
helpers the checks assert with, and the exit status (finish).

The Go tests write this module next to the script they run, so
"import s3checks" finds it in the script's own directory.
"""
import sys

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

failed = []


def client(endpoint, key=None, secret=None, addressing="path", verify=None, **config):
    """A boto3 S3 client of endpoint (region us-east-1) that tries each
    request once; config adds to its botocore Config (signature_version)."""
    cfg = Config(s3={"addressing_style": addressing}, retries={"max_attempts": 1}, **config)
    return boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=key, aws_secret_access_key=secret,
                        region_name="us-east-1", config=cfg, verify=verify)


def check(fn):
    """Runs fn at once (as a decorator) and prints its verdict."""
    name = fn.__name__
    try:
        fn()
        print("PASS", name, flush=True)
    except Exception as e:  # noqa: BLE001 - report every failure by name
        failed.append(name)
        print("FAIL %s: %r" % (name, e), flush=True)


def finish():
    """Exits 1 if any check failed."""
    sys.exit(1 if failed else 0)


def header(h, name):
    """The value of header name (lower case) in the sent headers h."""
    for k, v in h.items():
        if k.lower() == name:
            return v.decode() if isinstance(v, bytes) else v
    return None


def code_of(e):
    """The HTTP status and S3 error code of a ClientError."""
    return e.response["ResponseMetadata"]["HTTPStatusCode"], e.response.get("Error", {}).get("Code")


def expect_error(fn, status, code=None):
    """Calls fn and asserts that it fails with status (and code, if any)."""
    try:
        fn()
    except ClientError as e:
        st, c = code_of(e)
        if st != status or (code and c != code):
            raise AssertionError("got %s %s, want %s %s" % (st, c, status, code))
        return
    raise AssertionError("succeeded, want %s %s" % (status, code))

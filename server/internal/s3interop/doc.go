// Package s3interop holds interoperability tests: the official S3 clients
// (aws-sdk-go-v2 with its default checksum settings, minio-go v7, and
// boto3 through python3) run unmodified against latchkey's server
// in-process. It has no non-test code; docs/wire-s3.md ("Client
// interoperability") says what these tests establish. The boto3 scripts
// (testdata/boto3_*.py) share testdata/s3checks.py (client, @check,
// helpers), which runCheckScript writes next to each script it runs.
package s3interop

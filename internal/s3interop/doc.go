// Package s3interop holds interoperability tests: the official S3 clients
// (aws-sdk-go-v2 with its default checksum settings, minio-go v7, and
// boto3 through python3) run unmodified against latchkey's server
// in-process. It has no non-test code; findings about the server go to
// internal/s3api/INTEROP-FINDINGS.md.
package s3interop

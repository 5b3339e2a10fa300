// Package azblobstore is the store contract over Azure Blob Storage (and
// Azurite, its emulator), through the official SDK
// github.com/Azure/azure-sdk-for-go/sdk/storage/azblob.
//
// # Atomicity
//
// Create-if-absent is Put Blob with If-None-Match: *, compare-and-swap is
// Put Blob with If-Match: <ETag>, compare-and-delete is Delete Blob with
// If-Match: <ETag>. Azure evaluates the condition atomically with the
// write, so of N racing conditional writers exactly one wins.
//
// # Versions
//
// A Version is the blob's ETag, quoted. Azure ETags are per write, not
// content hashes: the same bytes written twice get two ETags (tested), so
// If-Match sees an A→B→A overwrite and a re-created key never gets back a
// version it had before a Delete. No header is added to values; the
// stored blob is exactly the value.
package azblobstore

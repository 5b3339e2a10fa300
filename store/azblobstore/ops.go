package azblobstore

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"

	"github.com/latchkey/latchkey/store"
	"github.com/latchkey/latchkey/store/internal/resolve"
)

// metaNonce is the metadata name (x-ms-meta-latchkeynonce) of the random
// nonce every write carries, so an ambiguous outcome can be resolved.
const metaNonce = "latchkeynonce"

// nonceIn finds the nonce in blob metadata; the SDK may change the case of
// metadata names.
func nonceIn(md map[string]*string) string {
	for k, v := range md {
		if strings.EqualFold(k, metaNonce) && v != nil {
			return *v
		}
	}
	return ""
}

// conditions turns a store condition into Azure access conditions.
func conditions(op, key string, cond store.Condition) (*blob.AccessConditions, resolve.OpKind, error) {
	condKind := resolve.OpCondPut
	if op == "delete" {
		condKind = resolve.OpCondDelete
	}
	if cond.IsAbsent() {
		any := azcore.ETagAny
		return &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfNoneMatch: &any}}, condKind, nil
	}
	if v, ok := cond.Match(); ok {
		if v == "" {
			return nil, condKind, store.NewOpError(backend, op, key, store.ErrConflict, errors.New("IfMatch of the zero version"))
		}
		e := azcore.ETag(v)
		return &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: &e}}, condKind, nil
	}
	return nil, resolve.OpWrite, nil
}

// Get returns the key's value and version.
func (s *Store) Get(ctx context.Context, key string) (store.Entry, error) {
	if err := s.check(ctx, "get", key, false); err != nil {
		return store.Entry{}, err
	}
	out, err := s.read.NewBlobClient(s.blob(key)).DownloadStream(ctx, nil)
	if err != nil {
		return store.Entry{}, opError("get", key, classify(resolve.OpRead, err), err)
	}
	defer out.Body.Close()
	value, err := io.ReadAll(out.Body)
	if err != nil {
		return store.Entry{}, opError("get", key, classify(resolve.OpRead, err), err)
	}
	return store.Entry{Key: key, Value: value, Version: quoteETag(out.ETag)}, nil
}

type nopCloser struct{ io.ReadSeeker }

func (nopCloser) Close() error { return nil }

// Put writes value under key if cond holds, as one Put Blob; see the
// package doc for how ambiguous outcomes are resolved.
func (s *Store) Put(ctx context.Context, key string, value []byte, cond store.Condition) (store.Version, error) {
	if err := s.check(ctx, "put", key, false); err != nil {
		return "", err
	}
	return s.putBytes(ctx, key, value, cond)
}

func (s *Store) putBytes(ctx context.Context, key string, value []byte, cond store.Condition) (store.Version, error) {
	ac, kind, err := conditions("put", key, cond)
	if err != nil {
		return "", err
	}
	nonce := resolve.NewNonce()
	bb := s.write.NewBlockBlobClient(s.blob(key))
	return s.res.SendPut(ctx, key, nonce, kind, cond, func() (store.Version, error) {
		out, err := bb.Upload(ctx, nopCloser{bytes.NewReader(value)}, &blockblob.UploadOptions{
			AccessConditions: ac,
			Metadata:         map[string]*string{metaNonce: &nonce},
		})
		return quoteETag(out.ETag), err
	})
}

// Delete removes key if cond holds.
func (s *Store) Delete(ctx context.Context, key string, cond store.Condition) error {
	if err := s.check(ctx, "delete", key, false); err != nil {
		return err
	}
	if cond.IsAbsent() {
		return store.NewOpError(backend, "delete", key, store.ErrUnsupported, errors.New("delete if-absent"))
	}
	ac, kind, err := conditions("delete", key, cond)
	if err != nil {
		return err
	}
	include := blob.DeleteSnapshotsOptionTypeInclude
	bc := s.write.NewBlobClient(s.blob(key))
	return s.res.SendDelete(ctx, key, kind, func() error {
		_, err := bc.Delete(ctx, &blob.DeleteOptions{AccessConditions: ac, DeleteSnapshots: &include})
		return err
	})
}

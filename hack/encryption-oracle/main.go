// encryption-oracle: kube-apiserver's own encryption at rest transformers
// (k8s.io/apiserver/pkg/storage/value/encrypt, v0.36.3) sealing and opening values, so that
// versa's formats are checked against Kubernetes' (crates/versa-storage-encryption/tests).
//
// One JSON request per line on stdin, one JSON answer per line on stdout:
//
//	{"op": "seal"|"open", "provider": "aesgcm"|"aescbc"|"secretbox", "keyName": "k1",
//	 "secret": "<base64 key>", "storageKey": "/registry/secrets/default/a", "data": "<base64>"}
//	-> {"data": "<base64>"} or {"error": "..."}
package main

import (
	"bufio"
	"context"
	"crypto/aes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"

	"k8s.io/apiserver/pkg/storage/value"
	aestransformer "k8s.io/apiserver/pkg/storage/value/encrypt/aes"
	"k8s.io/apiserver/pkg/storage/value/encrypt/secretbox"
)

type request struct {
	Op         string `json:"op"`
	Provider   string `json:"provider"`
	KeyName    string `json:"keyName"`
	Secret     string `json:"secret"`
	StorageKey string `json:"storageKey"`
	Data       string `json:"data"`
}

type answer struct {
	Data  *string `json:"data,omitempty"`
	Error string  `json:"error,omitempty"`
}

func data(b []byte) answer {
	s := base64.StdEncoding.EncodeToString(b)
	return answer{Data: &s}
}

func transformer(r request) (value.Transformer, error) {
	secret, err := base64.StdEncoding.DecodeString(r.Secret)
	if err != nil {
		return nil, err
	}
	var t value.Transformer
	switch r.Provider {
	case "aesgcm":
		block, err := aes.NewCipher(secret)
		if err != nil {
			return nil, err
		}
		if t, err = aestransformer.NewGCMTransformer(block); err != nil {
			return nil, err
		}
	case "aescbc":
		block, err := aes.NewCipher(secret)
		if err != nil {
			return nil, err
		}
		t = aestransformer.NewCBCTransformer(block)
	case "secretbox":
		var key [32]byte
		copy(key[:], secret)
		t = secretbox.NewSecretboxTransformer(key)
	default:
		return nil, fmt.Errorf("unknown provider %q", r.Provider)
	}
	prefix := []byte("k8s:enc:" + r.Provider + ":v1:" + r.KeyName + ":")
	return value.NewPrefixTransformers(fmt.Errorf("no matching prefix found"), value.PrefixTransformer{Transformer: t, Prefix: prefix}), nil
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 4<<20), 4<<20)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var r request
		if err := json.Unmarshal(in.Bytes(), &r); err != nil {
			_ = out.Encode(answer{Error: err.Error()})
			continue
		}
		_ = out.Encode(handle(r))
	}
}

func handle(r request) answer {
	t, err := transformer(r)
	if err != nil {
		return answer{Error: err.Error()}
	}
	input, err := base64.StdEncoding.DecodeString(r.Data)
	if err != nil {
		return answer{Error: err.Error()}
	}
	ctx := context.Background()
	dataCtx := value.DefaultContext(r.StorageKey)
	switch r.Op {
	case "seal":
		sealed, err := t.TransformToStorage(ctx, input, dataCtx)
		if err != nil {
			return answer{Error: err.Error()}
		}
		return data(sealed)
	case "open":
		opened, _, err := t.TransformFromStorage(ctx, input, dataCtx)
		if err != nil {
			return answer{Error: err.Error()}
		}
		return data(opened)
	}
	return answer{Error: "unknown op " + r.Op}
}

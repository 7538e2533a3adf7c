// Command trail-verifier checks the grant broker's call trail with Go's own transparency-log
// code (golang.org/x/mod/sumdb/tlog and sumdb/note), not ours: the signed checkpoint against a
// pinned verifier key, consistency with an older checkpoint the auditor kept, inclusion of
// records, and (with -complete) the tree hash rebuilt from every leaf.
//
// Usage: trail-verifier -url URL -key VKEY [-token T] [-old FILE] [-leaves FILE] [-complete] [-save FILE]
// Prints one line per check ("ok ..." or "FAIL ..."); exits 1 when any check fails.
package main

import (
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

type checkpoint struct {
	origin string
	size   int64
	root   tlog.Hash
}

type leaf struct {
	CallID    string `json:"callId"`
	LeafIndex int64  `json:"leafIndex"`
	Leaf      string `json:"leaf"`
}

var failed bool

func report(err error, what string) {
	if err != nil {
		failed = true
		fmt.Printf("FAIL %s: %v\n", what, err)
		return
	}
	fmt.Printf("ok %s\n", what)
}

func fetch(base, path, token string) ([]byte, error) {
	req, err := http.NewRequest("GET", base+path, nil)
	if err != nil {
		return nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	if res.StatusCode != 200 {
		return nil, fmt.Errorf("GET %s: %d %s", path, res.StatusCode, problem(body))
	}
	return body, nil
}

// problem names an error answer by its problem document's code and detail (RFC 9457), or quotes
// the body when it is not one. Any answer but 200 is a proof not had: the caller reports FAIL.
func problem(body []byte) string {
	var doc struct {
		Code   string `json:"code"`
		Detail string `json:"detail"`
	}
	if json.Unmarshal(body, &doc) != nil || doc.Code == "" {
		return strconv.Quote(string(body))
	}
	return doc.Code + ": " + doc.Detail
}

// open verifies the signed note with the pinned key and reads its C2SP checkpoint body.
func open(msg []byte, verifier note.Verifier) (checkpoint, error) {
	n, err := note.Open(msg, note.VerifierList(verifier))
	if err != nil {
		return checkpoint{}, err
	}
	lines := strings.Split(n.Text, "\n")
	if len(lines) < 4 || lines[0] != verifier.Name() {
		return checkpoint{}, fmt.Errorf("not a checkpoint of origin %s", verifier.Name())
	}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil || size < 0 {
		return checkpoint{}, fmt.Errorf("bad tree size %q", lines[1])
	}
	root, err := tlog.ParseHash(lines[2])
	if err != nil {
		return checkpoint{}, err
	}
	return checkpoint{origin: lines[0], size: size, root: root}, nil
}

func decodeHashes(body []byte) ([]tlog.Hash, int64, error) {
	var proof struct {
		LeafIndex int64    `json:"leafIndex"`
		Hashes    []string `json:"hashes"`
	}
	if err := json.Unmarshal(body, &proof); err != nil {
		return nil, 0, err
	}
	hashes := make([]tlog.Hash, len(proof.Hashes))
	for i, text := range proof.Hashes {
		h, err := tlog.ParseHash(text)
		if err != nil {
			return nil, 0, err
		}
		hashes[i] = h
	}
	return hashes, proof.LeafIndex, nil
}

func main() {
	base := flag.String("url", "", "the service's base URL")
	vkey := flag.String("key", "", "the pinned verifier key (note format)")
	token := flag.String("token", "", "a bearer token that may read the records' grants (inclusion proofs)")
	oldFile := flag.String("old", "", "an older signed checkpoint the auditor kept")
	leavesFile := flag.String("leaves", "", "JSON array of {callId, leafIndex, leaf (base64 leaf bytes)}")
	complete := flag.Bool("complete", false, "the leaves are every leaf of the tree: rebuild its hash")
	save := flag.String("save", "", "where to keep the verified checkpoint")
	flag.Parse()

	verifier, err := note.NewVerifier(*vkey)
	if err != nil {
		fmt.Println("FAIL verifier key:", err)
		os.Exit(2)
	}
	msg, err := fetch(*base, "/api/trail/checkpoint", "")
	if err != nil {
		fmt.Println("FAIL fetch checkpoint:", err)
		os.Exit(1)
	}
	latest, err := open(msg, verifier)
	report(err, "checkpoint signature")
	if err != nil {
		os.Exit(1)
	}
	if *save != "" {
		_ = os.WriteFile(*save, msg, 0o600)
	}

	if *oldFile != "" {
		oldMsg, err := os.ReadFile(*oldFile)
		if err == nil {
			var old checkpoint
			old, err = open(oldMsg, verifier)
			if err == nil {
				err = consistent(*base, old, latest)
			}
		}
		report(err, "consistency with the older checkpoint")
	}

	if *leavesFile != "" {
		data, err := os.ReadFile(*leavesFile)
		var leaves []leaf
		if err == nil {
			err = json.Unmarshal(data, &leaves)
		}
		if err != nil {
			report(err, "reading leaves")
			os.Exit(1)
		}
		for _, l := range leaves {
			if l.CallID != "" {
				report(included(*base, *token, latest, l), fmt.Sprintf("inclusion of %s at %d", l.CallID, l.LeafIndex))
			}
		}
		if *complete {
			report(treeHash(latest, leaves), fmt.Sprintf("tree hash of %d leaves", latest.size))
		}
	}
	if failed {
		os.Exit(1)
	}
}

func consistent(base string, old, latest checkpoint) error {
	if old.size > latest.size {
		return fmt.Errorf("rollback: the checkpoint served has size %d, an older one had %d", latest.size, old.size)
	}
	if old.size == latest.size {
		if old.root != latest.root {
			return fmt.Errorf("two checkpoints of size %d with different roots", old.size)
		}
		return nil
	}
	if old.size == 0 {
		return nil
	}
	body, err := fetch(base, fmt.Sprintf("/api/trail/proofs/consistency?from=%d&to=%d", old.size, latest.size), "")
	if err != nil {
		return err
	}
	proof, _, err := decodeHashes(body)
	if err != nil {
		return err
	}
	return tlog.CheckTree(tlog.TreeProof(proof), latest.size, latest.root, old.size, old.root)
}

func included(base, token string, latest checkpoint, l leaf) error {
	data, err := base64.StdEncoding.DecodeString(l.Leaf)
	if err != nil {
		return err
	}
	q := url.Values{"callId": {l.CallID}, "treeSize": {strconv.FormatInt(latest.size, 10)}}
	body, err := fetch(base, "/api/trail/proofs/inclusion?"+q.Encode(), token)
	if err != nil {
		return err
	}
	proof, index, err := decodeHashes(body)
	if err != nil {
		return err
	}
	if index != l.LeafIndex {
		return fmt.Errorf("the service puts the record at leaf %d, its receipt says %d", index, l.LeafIndex)
	}
	return tlog.CheckRecord(tlog.RecordProof(proof), latest.size, latest.root, index, tlog.RecordHash(data))
}

// treeHash rebuilds the tree from every leaf with tlog's own stored-hash layout and compares roots.
func treeHash(latest checkpoint, leaves []leaf) error {
	byIndex := map[int64][]byte{}
	for _, l := range leaves {
		data, err := base64.StdEncoding.DecodeString(l.Leaf)
		if err != nil {
			return err
		}
		byIndex[l.LeafIndex] = data
	}
	var stored []tlog.Hash
	reader := tlog.HashReaderFunc(func(indexes []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(indexes))
		for i, x := range indexes {
			out[i] = stored[x]
		}
		return out, nil
	})
	for n := int64(0); n < latest.size; n++ {
		data, ok := byIndex[n]
		if !ok {
			return fmt.Errorf("leaf %d is missing from the records", n)
		}
		hashes, err := tlog.StoredHashes(n, data, reader)
		if err != nil {
			return err
		}
		stored = append(stored, hashes...)
	}
	root, err := tlog.TreeHash(latest.size, reader)
	if err != nil {
		return err
	}
	if root != latest.root {
		return fmt.Errorf("the leaves hash to %s, the checkpoint says %s", root, latest.root)
	}
	return nil
}

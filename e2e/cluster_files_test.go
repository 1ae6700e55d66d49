package e2e

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testio"
)

// uploadTo posts body as an attachment named name to a node.
func uploadTo(t *testing.T, url, name string, body []byte) string {
	t.Helper()
	resp, err := http.Post(url+"/api/attachments?name="+name, "application/octet-stream", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var a struct{ SHA256, Name string }
	json.NewDecoder(resp.Body).Decode(&a)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("upload: %s", resp.Status)
	}
	return a.SHA256
}

// localCopy reports whether a node's own attachment store holds sha.
func (n *clusterProc) localCopy(sha string) bool {
	_, err := os.Stat(filepath.Join(n.data, "attachments", sha[:2], sha))
	return err == nil
}

// An attachment uploaded on one node is in the cluster's object store: an
// input referring to it sent through another node is accepted, and the
// lease holder's agent (a program that prints the file it is given) reads
// its bytes; every node serves it, fetching it into its own store; an id
// no node has is 404 on every node. `frontdesk backup` works on every
// node: each archive has the same chat log and every file the log refers
// to, and no NATS store.
func TestClusterAttachmentsOnEveryNode(t *testing.T) {
	dir := t.TempDir()
	agent := filepath.Join(dir, "cat-attachment")
	script := "#!/bin/sh\np=$(sed -n 's/.*\"path\":\"\\([^\"]*\\)\".*/\\1/p')\nprintf 'file at %s: ' \"$p\"\ncat \"$p\"\n"
	if err := os.WriteFile(agent, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	tc := newTestCluster(t, clusterOpts{extra: fmt.Sprintf("agent:\n  backend: command\n  command:\n    argv: [%q]\n", agent)})
	nodes := tc.nodes
	c := tc.holder()
	a, b := (c+1)%3, (c+2)%3

	content := []byte("the quarterly figures, only on one node at first\n")
	sha := uploadTo(t, nodes[a].p.url, "figures.txt", content)
	if nodes[b].localCopy(sha) || nodes[c].localCopy(sha) {
		t.Fatal("the file is on another node's disk before anyone asked for it")
	}

	body := fmt.Sprintf(`{"content":"","attachments":[%q]}`, sha)
	resp, err := http.Post(nodes[b].p.url+"/api/messages?wait=1&timeout=30", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Status, Reply, Error string
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	json.Unmarshal(raw, &out)
	if resp.StatusCode != http.StatusOK || out.Status != "completed" {
		t.Fatalf("input through %s: %s %s", nodes[b].name, resp.Status, raw)
	}
	holderPath := filepath.Join(nodes[c].data, "attachments", sha[:2], sha)
	if want := "file at " + holderPath + ": " + string(content); out.Reply != want {
		t.Errorf("the holder's agent replied %q, want %q", out.Reply, want)
	}

	// A second file, never referred to: a GET fetches it on every node.
	other := bytes.Repeat([]byte{0x89, 'P', 'N', 'G'}, 300000) // 1.2 MB: several object chunks
	sum := sha256.Sum256(other)
	osha := hex.EncodeToString(sum[:])
	if got := uploadTo(t, nodes[a].p.url, "scan.bin", other); got != osha {
		t.Fatalf("upload answered %s, want %s", got, osha)
	}
	checkTrioBackups(t, nodes, a)

	missing := strings.Repeat("ab", 32)
	for _, n := range nodes {
		for _, f := range []struct {
			sha  string
			want []byte
		}{{sha, content}, {osha, other}} {
			resp, err := http.Get(n.p.url + "/api/attachments/" + f.sha)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !bytes.Equal(got, f.want) {
				t.Errorf("GET %s from %s: %s, %d bytes, want %d", f.sha[:8], n.name, resp.Status, len(got), len(f.want))
			}
			if cd := resp.Header.Get("Content-Disposition"); f.sha == osha && !strings.Contains(cd, "scan.bin") {
				t.Errorf("GET from %s: Content-Disposition %q lost the upload's name", n.name, cd)
			}
		}
		resp, err := http.Get(n.p.url + "/api/attachments/" + missing)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET of a file no node has from %s: %s, want 404", n.name, resp.Status)
		}
	}
}

// trioSeqs waits until every node's hub and every node's own chat log
// (the copy a backup takes) hold the same last seq, and returns it. The
// two differ on the holder: its hub appends to the stream and its chat
// log copies the stream behind it, like every other node's.
func trioSeqs(t *testing.T, nodes []*clusterProc) int64 {
	t.Helper()
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		seqs := map[int64]bool{}
		for _, n := range nodes {
			var s struct {
				LastSeq int64 `json:"last_seq"`
			}
			testio.GetJSON(t, n.p.url+"/api/session", &s)
			seqs[s.LastSeq] = true
			tail, _, err := history.ReadTail(filepath.Join(n.data, "chat_history.ndjson"), 1)
			if err != nil {
				t.Fatal(err)
			}
			if len(tail) == 0 {
				seqs[0] = true
			} else {
				seqs[tail[0].Seq] = true
			}
		}
		if len(seqs) == 1 {
			for seq := range seqs {
				return seq
			}
		}
	}
	t.Fatal("the nodes' hubs and chat logs did not reach the same seq within 20 s")
	return 0
}

// checkTrioBackups sends an input with a file through node a (so only a
// and the holder are asked for it), then backs up every running node
// with `frontdesk backup`: the archives hold the same chat log, that file
// (each node fetched it as it copied the log) and nothing of NATS.
func checkTrioBackups(t *testing.T, nodes []*clusterProc, a int) {
	content := []byte("a file that only the log tells the third node about\n")
	sha := uploadTo(t, nodes[a].p.url, "log-only.txt", content)
	body := fmt.Sprintf(`{"content":"see the file","attachments":[%q]}`, sha)
	resp, err := http.Post(nodes[a].p.url+"/api/messages?wait=1&timeout=30", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("input through %s: %s", nodes[a].name, resp.Status)
	}
	seq := trioSeqs(t, nodes)
	var logs []string
	for _, n := range nodes {
		for end := time.Now().Add(10 * time.Second); !n.localCopy(sha) && time.Now().Before(end); {
			time.Sleep(20 * time.Millisecond)
		}
		out := filepath.Join(t.TempDir(), n.name+".tar.gz")
		cmd := exec.Command(binary, "backup", "-o", out, "-config", n.cfg)
		cmd.Dir = n.dir
		if msg, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(msg), fmt.Sprintf("up to seq %d", seq)) {
			var names []string
			if err == nil {
				for name, b := range tarFiles(t, out) {
					names = append(names, fmt.Sprintf("%s (%d bytes)", name, len(b)))
				}
			}
			ls, _ := exec.Command("ls", "-laR", n.data).CombinedOutput()
			t.Fatalf("backup of %s: %v: %s (want the chat log up to seq %d); archive: %v; data dir:\n%s", n.name, err, msg, seq, names, ls)
		}
		files := tarFiles(t, out)
		if !bytes.Equal(files["attachments/"+sha[:2]+"/"+sha], content) {
			t.Errorf("the backup of %s lacks the file the log refers to", n.name)
		}
		for name := range files {
			if strings.HasPrefix(name, "nats/") {
				t.Errorf("the backup of %s holds the NATS store: %s", n.name, name)
				break
			}
		}
		logs = append(logs, string(files["chat_history.ndjson"]))
	}
	if logs[0] == "" || logs[0] != logs[1] || logs[0] != logs[2] {
		t.Errorf("the nodes' backups hold different chat logs (%d, %d, %d bytes)", len(logs[0]), len(logs[1]), len(logs[2]))
	}
	checkRestoredAsSingle(t, nodes[2], seq)
}

// checkRestoredAsSingle restores the last backup of n into a new data
// directory and runs a single node (no cluster: block) on it: it is the
// cluster's session, up to seq, and takes input.
func checkRestoredAsSingle(t *testing.T, n *clusterProc, seq int64) {
	var cluster struct {
		SessionID string `json:"session_id"`
	}
	testio.GetJSON(t, n.p.url+"/api/session", &cluster)
	data := filepath.Join(t.TempDir(), "restored")
	archive := filepath.Join(t.TempDir(), "backup.tar.gz")
	for _, args := range [][]string{{"backup", "-o", archive, "-config", n.cfg}, {"restore", "-data", data, archive}} {
		if msg, err := exec.Command(binary, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v: %s", args[0], err, msg)
		}
	}
	single := startBinary(t, t.TempDir(), nil, "-addr", "127.0.0.1:0", "-data", data)
	var s struct {
		SessionID string `json:"session_id"`
		LastSeq   int64  `json:"last_seq"`
		Cluster   any    `json:"cluster"`
	}
	testio.GetJSON(t, single.url+"/api/session", &s)
	if s.SessionID != cluster.SessionID || s.LastSeq != seq || s.Cluster != nil {
		t.Errorf("restored as a single node: %+v, want session %s up to seq %d, no cluster", s, cluster.SessionID, seq)
	}
	resp, err := http.Post(single.url+"/api/messages?wait=1", "application/json", strings.NewReader(`{"content":"after the restore"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("input to the restored single node: %s", resp.Status)
	}
}

// tarFiles reads the regular files of a backup archive.
func tarFiles(t *testing.T, path string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	walkArchive(t, path, func(h *tar.Header, r io.Reader) {
		if h.Typeflag == tar.TypeReg {
			files[h.Name], _ = io.ReadAll(r)
		}
	})
	return files
}

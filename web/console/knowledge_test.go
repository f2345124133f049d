package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/gateway/knowledge"
	"github.com/hermes-gw/hermes/gateway/store"
)

// upload posts a document to the knowledge page as the browser's form
// does.
func upload(t *testing.T, c *http.Client, base, csrf, name string, data []byte, fields map[string]string) (int, string) {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField("csrf", csrf)
	for k, v := range fields {
		_ = mw.WriteField(k, v)
	}
	fw, err := mw.CreateFormFile("file", name)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = fw.Write(data)
	_ = mw.Close()
	resp, err := c.Post(base+"/knowledge/upload", mw.FormDataContentType(), &body)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	page, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(page)
}

func documents(t *testing.T, f *fixture) []knowledge.Document {
	t.Helper()
	docs, err := knowledge.List(context.Background(), f.pool)
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

const leaveRules = "# 休假制度\n\n## 婚假\n\n员工依法登记结婚的，可享受婚假 3 天。\n\n## 年假\n\n工作满一年的，年休假 5 天。\n"

// TestKnowledgePageUploadsListsAndRefuses: an admin uploads, re-indexes
// and deletes documents; a refused file is named with its reason and
// adds nothing; a viewer lists only. The page reports the questions not
// answered (masked) and the documents never cited.
func TestKnowledgePageUploadsListsAndRefuses(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	base := f.srv.URL + "/console"

	v := client(t)
	_, vcsrf := f.login(t, v, viewerUser, viewerPass)
	if status, body := get(t, v, base+"/knowledge"); status != http.StatusOK || strings.Contains(body, `id="kb-upload"`) || !strings.Contains(body, "只读账号") {
		t.Fatalf("viewer's page: %d\n%s", status, body)
	}
	if status, _ := upload(t, v, base, vcsrf, "leave.md", []byte(leaveRules), nil); status != http.StatusForbidden || len(documents(t, f)) != 0 {
		t.Fatalf("viewer's upload: %d", status)
	}

	c := client(t)
	_, csrf := f.login(t, c, adminUser, adminPass)
	status, body := upload(t, c, base, csrf, "休假制度.md", []byte(leaveRules), map[string]string{"version": "2025版", "corps": testCorpID, "departments": "9， 12"})
	if status != http.StatusOK || !strings.Contains(body, "已添加《休假制度》：") || !strings.Contains(body, `id="kb-upload"`) {
		t.Fatalf("upload: %d\n%s", status, body)
	}
	docs := documents(t, f)
	if len(docs) != 1 || docs[0].Version != "2025版" || strings.Join(docs[0].Audience.Departments, ",") != "9,12" || docs[0].AddedBy != adminUser {
		t.Fatalf("stored: %+v", docs)
	}
	id := itoa(docs[0].ID)

	t.Run("Refused", func(t *testing.T) {
		for _, c2 := range []struct{ name, data, reason string }{
			{"scan.pdf", "%PDF-1.7\nnot a pdf at all", "文件损坏或无法解析"},
			{"blank.md", "  \n\n", "没有可提取的文字"},
		} {
			status, body := upload(t, c, base, csrf, c2.name, []byte(c2.data), nil)
			if status != http.StatusUnprocessableEntity || !strings.Contains(body, "已拒绝 "+c2.name+"："+c2.reason) {
				t.Errorf("%s: %d, want 422 naming it with %q\n%s", c2.name, status, c2.reason, body)
			}
		}
		big := bytes.Repeat([]byte("大"), 7<<20) // 21 MB: over media.max_bytes' 20 MB
		if status, body := upload(t, c, base, csrf, "huge.txt", big, nil); status != http.StatusRequestEntityTooLarge || !strings.Contains(body, "20 MB") {
			t.Errorf("an upload over the cap: %d\n%s", status, body)
		}
		if n := len(documents(t, f)); n != 1 {
			t.Errorf("%d documents after refused uploads", n)
		}
	})

	t.Run("GapsAndNeverCited", func(t *testing.T) {
		in, _, err := store.InsertInbound(ctx, f.pool, f.ch.Message("acc-1", "msg-gap-1", "lisi", "lisi", "陪产假几天？我手机 13812345678", false, false), "done")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.pool.Exec(ctx, `INSERT INTO knowledge_gaps (inbound_id, corp_id, question, found, asked_at) VALUES ($1, 'c', $2, 0, $3)`,
			in, "陪产假几天？我手机 13812345678", time.Now()); err != nil {
			t.Fatal(err)
		}
		status, body := get(t, v, base+"/knowledge")
		if status != http.StatusOK {
			t.Fatalf("page: %d %s", status, body)
		}
		if !strings.Contains(body, `id="kb-gaps"`) {
			t.Fatalf("no gaps table:\n%s", body[strings.Index(body, "<main"):])
		}
		gaps := body[strings.Index(body, `id="kb-gaps"`):]
		if !strings.Contains(gaps, "陪产假几天") || strings.Contains(body, "13812345678") {
			t.Errorf("the gaps report: %s", gaps)
		}
		if never := body[strings.Index(body, `id="kb-never-cited"`):]; !strings.Contains(never, "休假制度") {
			t.Errorf("never cited: %s", never)
		}
	})

	t.Run("RunViewShowsRetrievedAndCited", func(t *testing.T) {
		tr, _ := json.Marshal(knowledge.Trace{Retrieved: []knowledge.Traced{{DocumentID: 1, Source: "《休假制度》2025版 · 婚假", Seqs: []int{1}, Cited: true},
			{DocumentID: 1, Source: "《休假制度》2025版 · 年假", Seqs: []int{2}}}})
		if _, err := f.pool.Exec(ctx, `INSERT INTO run_steps (run_id, seq, step, kind, tool, observation) VALUES ($1, 100, 0, $2, $3, $4)`,
			f.runID, knowledge.TraceKind, knowledge.ToolName, string(tr)); err != nil {
			t.Fatal(err)
		}
		_, body := get(t, v, base+"/runs/"+f.runID)
		for _, want := range []string{"知识库检索", "《休假制度》2025版 · 婚假 · <span class=\"ok\">已引用", "《休假制度》2025版 · 年假 · <span class=\"muted\">未引用"} {
			if !strings.Contains(body, want) {
				t.Errorf("run view lacks %q", want)
			}
		}
	})

	t.Run("ReindexAndDelete", func(t *testing.T) {
		if status, _ := postForm(t, v, base+"/knowledge/"+id+"/delete", url.Values{"csrf": {vcsrf}}); status != http.StatusForbidden {
			t.Errorf("viewer's delete: %d", status)
		}
		if _, err := f.pool.Exec(ctx, `UPDATE knowledge_chunks SET terms = '{}', nterms = 0`); err != nil {
			t.Fatal(err)
		}
		if status, body := postForm(t, c, base+"/knowledge/"+id+"/reindex", url.Values{"csrf": {csrf}}); status != http.StatusOK || !strings.Contains(body, "已重建索引：2 个段落") {
			t.Errorf("reindex: %d\n%s", status, body)
		}
		var empty int
		if err := f.pool.QueryRow(ctx, `SELECT count(*) FROM knowledge_chunks WHERE nterms = 0`).Scan(&empty); err != nil || empty != 0 {
			t.Errorf("%d passages without terms after re-indexing (%v)", empty, err)
		}
		if status, body := postForm(t, c, base+"/knowledge/"+id+"/delete", url.Values{"csrf": {csrf}}); status != http.StatusOK || !strings.Contains(body, "已删除《休假制度》") {
			t.Errorf("delete: %d\n%s", status, body)
		}
		if status, _ := postForm(t, c, base+"/knowledge/"+id+"/delete", url.Values{"csrf": {csrf}}); status != http.StatusNotFound {
			t.Errorf("deleting again: %d, want 404", status)
		}
		var left int
		if err := f.pool.QueryRow(ctx, `SELECT count(*) FROM knowledge_chunks`).Scan(&left); err != nil || left != 0 || len(documents(t, f)) != 0 {
			t.Errorf("after delete: %d passages (%v)", left, err)
		}
	})
}

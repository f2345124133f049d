package knowledge_test

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hermes-gw/hermes/gateway/knowledge"
	"github.com/hermes-gw/hermes/gateway/media/document"
	"github.com/hermes-gw/hermes/gateway/store/storetest"
)

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

const corp = "ww-acme"

var (
	zhang    = knowledge.Caller{CorpID: corp, UserID: "zhangsan", ChatID: "c1", Depts: []string{"2"}}
	hrStaff  = knowledge.Caller{CorpID: corp, UserID: "lihr", ChatID: "c2", Depts: []string{"9"}}
	noDepts  = knowledge.Caller{CorpID: corp, UserID: "lihr", ChatID: "c2"} // the directory lookup failed
	stranger = knowledge.Caller{CorpID: "ww-other", UserID: "lihr", ChatID: "c2", Depts: []string{"9"}}
)

func add(t *testing.T, pool *pgxpool.Pool, n knowledge.NewDocument) knowledge.Added {
	t.Helper()
	if n.Name == "" {
		n.Name = n.Title + ".md"
	}
	a, err := knowledge.Add(context.Background(), pool, n, t0)
	if err != nil {
		t.Fatalf("add %s: %v", n.Title, err)
	}
	return a
}

func search(t *testing.T, pool *pgxpool.Pool, c knowledge.Caller, q string) []knowledge.Passage {
	t.Helper()
	ps, err := knowledge.Search(context.Background(), pool, c, q, 5, knowledge.Lexical{}, knowledge.Similar{})
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

func joined(ps []knowledge.Passage) string {
	var b strings.Builder
	for _, p := range ps {
		b.WriteString(p.Title + "|" + p.Heading + "|" + p.Text + "\n")
	}
	return b.String()
}

const leave = "# 休假制度\n\n## 婚假\n\n员工依法登记结婚的，可享受婚假 3 天，须在登记后一年内休完。\n\n## 年假\n\n工作满一年不满十年的，年休假 5 天。\n"

const salary = "# 薪酬等级表\n\n| 职级 | 月薪上限 |\n|---|---|\n| 总监 | 58000 |\n| 经理 | 36000 |\n"

func TestOutsiderNeverGetsRestrictedPassage(t *testing.T) {
	pool := storetest.NewPool(t)
	add(t, pool, knowledge.NewDocument{Title: "休假制度", Data: []byte(leave), Audience: knowledge.Audience{Corps: []string{corp}}})
	add(t, pool, knowledge.NewDocument{Title: "薪酬等级表", Data: []byte(salary),
		Audience: knowledge.Audience{Corps: []string{corp}, Departments: []string{"9"}}})

	if got := joined(search(t, pool, hrStaff, "总监的月薪上限是多少")); !strings.Contains(got, "58000") {
		t.Fatalf("HR's member does not get the salary table: %q", got)
	}
	for name, c := range map[string]knowledge.Caller{"another department": zhang, "departments unknown": noDepts, "another corp": stranger} {
		t.Run(name, func(t *testing.T) {
			if got := joined(search(t, pool, c, "总监的月薪上限是多少 薪酬等级表 经理")); strings.Contains(got, "58000") || strings.Contains(got, "薪酬") {
				t.Fatalf("restricted passage reached %s: %q", name, got)
			}
		})
	}
	if got := joined(search(t, pool, zhang, "婚假几天")); !strings.Contains(got, "婚假 3 天") {
		t.Fatalf("public rule not found: %q", got)
	}
	if got := joined(search(t, pool, stranger, "婚假几天")); got != "" {
		t.Fatalf("another corp's employee reads this corp's handbook: %q", got)
	}
}

func TestAudienceOfUsersAndChats(t *testing.T) {
	pool := storetest.NewPool(t)
	add(t, pool, knowledge.NewDocument{Title: "机房门禁", Data: []byte("机房门禁密码每月更换，找 IT 值班领取。"),
		Audience: knowledge.Audience{Corps: []string{corp}, Users: []string{"lihr"}}})
	add(t, pool, knowledge.NewDocument{Title: "项目群须知", Data: []byte("项目群的周报每周五下午提交。"),
		Audience: knowledge.Audience{Corps: []string{corp}, Chats: []string{"c1"}}})
	if got := joined(search(t, pool, zhang, "机房门禁密码")); got != "" {
		t.Fatalf("a user-limited document reached another user: %q", got)
	}
	if got := joined(search(t, pool, noDepts, "机房门禁密码")); !strings.Contains(got, "值班") {
		t.Fatalf("a listed user does not get it: %q", got)
	}
	if got := joined(search(t, pool, hrStaff, "周报什么时候提交")); got != "" {
		t.Fatalf("a chat-limited document reached another chat: %q", got)
	}
	if got := joined(search(t, pool, zhang, "周报什么时候提交")); !strings.Contains(got, "周五") {
		t.Fatalf("the chat's member does not get it: %q", got)
	}
}

func TestNewerVersionSupersedes(t *testing.T) {
	pool := storetest.NewPool(t)
	day := func(s string) time.Time { d, _ := time.Parse(time.DateOnly, s); return d }
	old := add(t, pool, knowledge.NewDocument{Key: "travel", Title: "差旅报销标准", Version: "2024版", Effective: day("2024-01-01"),
		Data: []byte("出差住宿标准：一线城市每晚 400 元。")})
	cur := add(t, pool, knowledge.NewDocument{Key: "travel", Title: "差旅报销标准", Version: "2025版", Effective: day("2025-03-01"),
		Data: []byte("出差住宿标准：一线城市每晚 550 元。")})
	// An older version added late does not take over.
	add(t, pool, knowledge.NewDocument{Key: "travel", Title: "差旅报销标准", Version: "2023版", Effective: day("2023-01-01"),
		Data: []byte("出差住宿标准：一线城市每晚 350 元。")})
	got := search(t, pool, zhang, "出差住酒店能报多少")
	if s := joined(got); !strings.Contains(s, "550") || strings.Contains(s, "400") || strings.Contains(s, "350") {
		t.Fatalf("want the 2025 figure only: %q", s)
	}
	if got[0].Version != "2025版" {
		t.Fatalf("version = %q", got[0].Version)
	}
	if _, err := knowledge.Delete(context.Background(), pool, cur.Document.ID); err != nil {
		t.Fatal(err)
	}
	if s := joined(search(t, pool, zhang, "出差住酒店能报多少")); !strings.Contains(s, "400") {
		t.Fatalf("with the 2025 version deleted, the 2024 one is in force: %q", s)
	}
	_ = old
}

func TestSameFileTwiceIsNoOp(t *testing.T) {
	pool := storetest.NewPool(t)
	n := knowledge.NewDocument{Title: "休假制度", Data: []byte(leave)}
	first := add(t, pool, n)
	second := add(t, pool, n)
	if !second.Unchanged || second.Document.ID != first.Document.ID {
		t.Fatalf("second add = %+v, want unchanged %d", second, first.Document.ID)
	}
	docs, err := knowledge.List(context.Background(), pool)
	if err != nil || len(docs) != 1 || docs[0].Chunks != first.Chunks {
		t.Fatalf("list = %+v, %v", docs, err)
	}
}

func TestDeleteRemovesPassages(t *testing.T) {
	pool := storetest.NewPool(t)
	a := add(t, pool, knowledge.NewDocument{Title: "休假制度", Data: []byte(leave)})
	if _, err := pool.Exec(context.Background(), `UPDATE knowledge_chunks SET embedding = '{1,0}'`); err != nil {
		t.Fatal(err)
	}
	if _, err := knowledge.Delete(context.Background(), pool, a.Document.ID); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM knowledge_chunks`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("passages left: %d, %v", n, err)
	}
	if got := search(t, pool, zhang, "婚假几天"); len(got) != 0 {
		t.Fatalf("a deleted document answers: %q", joined(got))
	}
	if _, err := knowledge.Delete(context.Background(), pool, a.Document.ID); !errors.Is(err, knowledge.ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
}

// zipBomb is a DOCX whose document part inflates past media's cap.
func zipBomb(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, _ := zw.Create("[Content_Types].xml")
	w.Write([]byte(`<Types/>`))
	w, _ = zw.Create("word/document.xml")
	zero := make([]byte, 1<<20)
	for range (document.DefaultMaxUncompressed >> 20) + 4 {
		w.Write(zero)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestUnreadableFileIsRefusedByNameAndChangesNothing(t *testing.T) {
	pool := storetest.NewPool(t)
	for _, tc := range []struct {
		name string
		data []byte
		want error
	}{
		{"bomb.docx", zipBomb(t), document.ErrBomb},
		{"tool.exe", append([]byte("MZ\x90\x00\x03\x00\x00\x00"), make([]byte, 200)...), document.ErrUnsupported},
		{"empty.txt", []byte("   \n\n"), document.ErrEmpty},
	} {
		_, err := knowledge.Add(context.Background(), pool, knowledge.NewDocument{Name: tc.name, Title: tc.name, Data: tc.data}, t0)
		if !errors.Is(err, knowledge.ErrUnreadable) || !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.name) {
			t.Errorf("%s: err = %v, want %v naming the file", tc.name, err, tc.want)
		}
	}
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM knowledge_documents) + (SELECT count(*) FROM knowledge_chunks)`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("rows written: %d, %v", n, err)
	}
}

func TestAudienceNeedsItsCorp(t *testing.T) {
	pool := storetest.NewPool(t)
	_, err := knowledge.Add(context.Background(), pool, knowledge.NewDocument{Name: "a.md", Title: "a", Data: []byte("内容"),
		Audience: knowledge.Audience{Departments: []string{"9"}}}, t0)
	if !errors.Is(err, knowledge.ErrInvalid) {
		t.Fatalf("err = %v", err)
	}
}

func TestAnswerSplitOverAdjacentSectionsComesWhole(t *testing.T) {
	pool := storetest.NewPool(t)
	doc := "# VPN 使用指南\n\n## Mac 连接 VPN\n\n" + strings.Repeat("打开系统设置，在网络中添加 VPN 配置。", 12) +
		"\n\n## Mac 连不上怎么办\n\n先退出客户端，删除钥匙串中的旧证书，再重新登录。\n\n## Windows\n\n" + strings.Repeat("Windows 用户请安装客户端。", 20)
	add(t, pool, knowledge.NewDocument{Title: "VPN 使用指南", Data: []byte(doc)})
	got := search(t, pool, zhang, "mac 上 VPN 连不上咋办")
	if len(got) == 0 || !strings.Contains(got[0].Text, "钥匙串") {
		t.Fatalf("top passage: %q", joined(got))
	}
}

package knowledge_test

import (
	"strings"
	"testing"

	"github.com/hermes-gw/hermes/gateway/knowledge"
	"github.com/hermes-gw/hermes/gateway/media/document"
)

func TestCutKeepsEachTableRowWithItsHeader(t *testing.T) {
	res := document.Result{Kind: document.XLSX, Text: "[sheet 打印机]\n地点\t型号\t彩打\n上海 5F\tHP M479\t是\n北京 3F\tBrother L2\t否\n"}
	got := knowledge.Cut(res)
	if len(got) != 2 || got[0].Text != "地点: 上海 5F；型号: HP M479；彩打: 是" || got[0].Heading != "打印机" {
		t.Fatalf("chunks = %+v", got)
	}
	md := knowledge.Cut(document.Result{Kind: document.Text, Text: "## 住宿\n\n| 城市 | 标准 |\n|---|---|\n| 上海 | 600 |\n"})
	if len(md) != 1 || md[0].Text != "城市: 上海；标准: 600" || md[0].Heading != "住宿" {
		t.Fatalf("markdown table = %+v", md)
	}
}

func TestCutFollowsHeadingsStepsAndPages(t *testing.T) {
	text := "# 员工手册\n## 报销\n" + strings.Repeat("报销须附发票原件。", 40) + "\n\n1. 登录系统\n2. 填写单据\n3. 提交审批\n"
	got := knowledge.Cut(document.Result{Kind: document.Text, Text: text})
	last := got[len(got)-1]
	if last.Heading != "员工手册 > 报销" || !strings.HasPrefix(last.Text, "1. 登录系统") || !strings.Contains(last.Text, "3. 提交审批") {
		t.Fatalf("steps not kept together under their heading: %+v", got)
	}
	pdf := knowledge.Cut(document.Result{Kind: document.PDF, Text: "[page 1]\n目录\n[page 7]\n第十二条 婚假 3 天。\n"})
	if len(pdf) != 2 || pdf[1].Page != 7 {
		t.Fatalf("pages = %+v", pdf)
	}
	table := knowledge.Cut(document.Result{Kind: document.Text, Text: "<html><body><h2>缴纳比例</h2>\n<table>\n<tr><th>项目</th><th>公司</th></tr>\n" +
		"<tr><td>养老保险</td><td>16%</td></tr>\n<tr>\n  <td>住房公积金</td>\n  <td>12%</td>\n</tr>\n</table>\n<p>按月缴纳。</p></body></html>"})
	if len(table) != 3 || table[1].Text != "项目: 住房公积金；公司: 12%" || table[1].Heading != "缴纳比例" || table[2].Text != "按月缴纳。" {
		t.Fatalf("html table = %+v", table)
	}
	html := knowledge.Cut(document.Result{Kind: document.Text, Text: "<html><body><h2>Wi-Fi</h2><p>密码见前台&amp;门口。</p></body></html>"})
	if len(html) != 1 || html[0].Heading != "Wi-Fi" || html[0].Text != "密码见前台&门口。" {
		t.Fatalf("html = %+v", html)
	}
}

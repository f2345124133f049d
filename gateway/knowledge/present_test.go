package knowledge

import (
	"strings"
	"testing"
	"time"
)

// TestPresentGroupsPassagesByDocument: what the model reads names each
// document once, in the order of its best passage, leads a passage with
// its section, names a table's columns once, leaves out lines repeating
// the title, and dates documents only where two carry a date.
func TestPresentGroupsPassagesByDocument(t *testing.T) {
	eff := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ps := []Passage{
		{DocumentID: 1, Title: "差旅费报销标准", Version: "2026版", Effective: eff, Heading: "差旅费报销标准（2026版） > 一、住宿标准",
			Text: "差旅费报销标准（2026版）\n一线城市每晚不超过 550 元。"},
		{DocumentID: 2, Title: "付款审批权限表", Text: "付款类型: 供应商付款；金额区间: 5 万元以下；审批人: 财务经理"},
		{DocumentID: 1, Title: "差旅费报销标准", Version: "2026版", Effective: eff, Heading: "差旅费报销标准（2026版） > 二、伙食补助",
			Text: "伙食补助每人每天 100 元。"},
		{DocumentID: 2, Title: "付款审批权限表", Text: "付款类型: 供应商付款；金额区间: 5 万至 50 万元；审批人: 财务总监"},
	}
	want := "《差旅费报销标准》2026版\n[住宿标准] 一线城市每晚不超过 550 元。\n[伙食补助] 伙食补助每人每天 100 元。\n\n" +
		"《付款审批权限表》\n付款类型 | 金额区间 | 审批人\n供应商付款 | 5 万元以下 | 财务经理\n供应商付款 | 5 万至 50 万元 | 财务总监"
	if got := present(ps); got != want {
		t.Fatalf("present =\n%s\nwant\n%s", got, want)
	}
	cut := []Passage{{DocumentID: 4, Title: "员工休假制度", Heading: "病假", Text: ellipsis + "[丧假] 给予丧假 3 天。"}}
	if got, want := present(cut), "《员工休假制度》\n[丧假] 给予丧假 3 天。"; got != want {
		t.Fatalf("a window starting at a merged section: %q, want %q", got, want)
	}
	ps[1].Effective = eff
	if got := present(ps); !strings.HasPrefix(got, "《差旅费报销标准》2026版（2026-01-01 起）\n") {
		t.Fatalf("two dated documents, the first not dated:\n%s", got)
	}
	if got := present([]Passage{{DocumentID: 3, Title: "办公室打印机使用指南", Text: "办公室打印机使用指南"}}); got != noPassages {
		t.Fatalf("a passage that only repeats its title: %q", got)
	}
}

// TestWindowGrowsByTheQuestionsWordsAndSteps: past plainRunes a window
// takes the sentences holding the question's words and a list's next
// steps, not the rest of its section.
func TestWindowGrowsByTheQuestionsWordsAndSteps(t *testing.T) {
	filler := "病假期间工资按本人基本工资的百分之八十发放，全年累计病假超过三十天的部分按当地最低工资标准发放。"
	text := "员工因病就医需请病假的，一天以内可事后补交就诊记录；连续两天及以上须提供二级以上医院出具的病假条。" +
		"病假条须写明诊断和建议休息天数，证明上须有医院盖章，复印件无效，电子病历截图亦可作为证明提交，纸质原件请在返岗后一周内交给人力资源部。\n" + filler + filler
	got := window(text, "", []weighted{{"医院", 3}, {"证明", 3}}, false, 300)
	if !strings.Contains(got, "病假条") || strings.Contains(got, "百分之八十") {
		t.Fatalf("window %q", got)
	}
	steps := "公司 VPN 使用 EasyConnect 客户端，服务器地址为 vpn.example.cn，账号为公司邮箱前缀，密码与 OA 密码相同，登录时需输入手机令牌上的动态码。" +
		"客户端每次启动都会检查新版本，请按提示升级，旧版本客户端将在下个季度停止服务，届时无法登录公司内网。\n" +
		"1. 打开浏览器访问 https://vpn.example.cn ，下载 Windows 版客户端。\n2. 以管理员身份运行安装包，安装完成后重启电脑。\n" + filler
	got = window(steps, "", []weighted{{"windows", 3}, {"客户端", 2}}, false, 300)
	if !strings.Contains(got, "以管理员身份运行") || strings.Contains(got, "百分之八十") {
		t.Fatalf("window %q", got)
	}
}

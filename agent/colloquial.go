package agent

import (
	"strings"
)

// How employees name what they want: not with the skill's words but with a
// clipped verb (催 for 催办, 关 for 关闭, 撤 for 撤销, 报 for 报销) or a phrase
// (「修好没有」 for a status look-up, 「不要了」 for a cancellation). A synonym
// list per skill would have to repeat these for every skill of a family
// (each 报修单, 工单 and 报销 skill its own 催), and authors forget; so the
// agent keeps one table of colloquial words, each expanded into the
// canonical words skills are written with. An expansion counts less than
// a word the user wrote (colloquialFactor), so it ranks the siblings of a
// family without outweighing the object the user named.
//
// The table is matching vocabulary, not text anyone reads; a deployment
// extends it with Options.Colloquial.

// colloquialFactor weighs an expanded word against one the user wrote.
const colloquialFactor = 0.7

// maxColloquialEntries bounds Options.Colloquial.
const maxColloquialEntries = 512

// defaultColloquial maps a colloquial word to the canonical words it
// stands for.
var defaultColloquial = map[string][]string{
	// urging
	"催": {"催办", "催促"}, "加急": {"催办"}, "太慢": {"催办"}, "好慢": {"催办"}, "怎么还没": {"催办", "进度"},
	// closing
	"关": {"关闭"}, "关掉": {"关闭"}, "结了": {"关闭", "结单"},
	// cancelling
	"撤": {"撤销", "撤回", "取消"}, "不要了": {"取消"}, "不用了": {"取消"}, "不休了": {"取消"}, "退掉": {"取消"},
	// rating
	"评": {"评价"}, "好评": {"评价"}, "差评": {"评价"}, "五星": {"评价", "打分"}, "打个分": {"评价", "打分"},
	// applying
	"报": {"报销"}, "报一笔": {"报销", "提交"}, "报一下": {"报销", "提交"}, "怎么报": {"报销", "提交"}, "报个": {"申请", "提交"}, "登记": {"申请", "提交"}, "走个": {"申请", "流程"},
	"交一个": {"提交", "申请"}, "开一个": {"申请", "办理"}, "开个": {"申请", "办理"}, "补一下": {"补卡", "申请"}, "补办": {"申请", "办理"},
	"约": {"预约"}, "订": {"预订", "申请"}, "想装": {"安装", "申请"}, "想申请": {"申请"}, "取出来": {"提取", "申请"}, "预支": {"借款", "申请"},
	"休一天": {"请假", "申请"}, "请下": {"请假", "申请"}, "要请": {"请假", "申请"},
	// status and records
	"到哪": {"进度", "状态"}, "批了没": {"审批", "进度"}, "好了没": {"进度", "状态"}, "修好": {"进度", "状态"}, "处理完": {"进度", "状态"},
	"开好": {"进度", "状态"}, "开通了没": {"进度", "状态"}, "出来没": {"查询", "报告"}, "还没人": {"进度", "催办"},
	"翻一下": {"记录", "明细"}, "都请过": {"记录", "历史"}, "每个月": {"明细", "记录"},
	// balances and resets
	"还剩": {"余额", "剩余"}, "还能休": {"余额", "剩余"}, "还有几天": {"余额", "剩余"}, "忘了": {"重置"}, "忘记": {"重置"},
	"锁了": {"解锁"}, "被锁": {"解锁"}, "续一下": {"续期"}, "快到期": {"续期"}, "还回去": {"归还"},
	// objects named loosely
	"报个修": {"报修"}, "坏了": {"报修", "维修"}, "周六来": {"加班"}, "周日来": {"加班"}, "周末来": {"加班"}, "干了一天活": {"加班"},
	"最多能报": {"报销标准", "规定"}, "能报多少": {"报销标准", "规定"}, "票怎么报": {"报销", "发票报销"},
	"到账": {"工资"}, "发薪": {"工资"}, "连不上": {"vpn", "远程访问"}, "内网": {"vpn", "远程访问"},
}

// colloquialTable is the default table with a deployment's additions.
type colloquialTable map[string][]string

func newColloquialTable(extra map[string][]string) colloquialTable {
	if len(extra) == 0 {
		return defaultColloquial
	}
	t := make(colloquialTable, len(defaultColloquial)+len(extra))
	for k, v := range defaultColloquial {
		t[k] = v
	}
	n := 0
	for k, v := range extra {
		if k = matchNorm(strings.TrimSpace(k)); k == "" || n >= maxColloquialEntries {
			continue
		}
		t[k] = append(append([]string(nil), t[k]...), v...)
		n++
	}
	return t
}

// expand adds to q the terms of the canonical words of each colloquial
// word found in folded (the normalised text), at colloquialFactor of their
// weight; a term the user wrote keeps its own weight.
func (t colloquialTable) expand(folded string, q map[string]float64) {
	for word, canon := range t {
		if !strings.Contains(folded, word) {
			continue
		}
		for _, c := range canon {
			for term, w := range terms(c) {
				if w *= colloquialFactor; w > q[term] {
					q[term] = w
				}
			}
		}
	}
}

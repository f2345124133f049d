package knowledge

import (
	"maps"
	"math"
	"slices"
	"strings"

	unorm "golang.org/x/text/unicode/norm"

	"github.com/hermes-gw/hermes/gateway/memory"
)

// Employees ask in their own words (餐补, 生娃, 升职, 打车) and policies
// are written in the company's (伙食补助, 生育/产假, 晋升, 出租车): bigrams
// of one never meet the other. The knowledge base keeps a vocabulary of
// workplace words (leave, pay, benefits, travel, expenses, attendance,
// IT, office) written from the domain, each mapped to the words documents
// use for it; a question holding one is searched with those words too, at
// vocabularyFactor of their weight, so a passage with the question's own
// words still ranks first. A deployment adds its own words with
// knowledge.vocabulary (its jargon, product names, abbreviations).
//
// The table is matching vocabulary, not text anyone reads.

// vocabularyFactor weighs a term the vocabulary added against one the
// question wrote.
const vocabularyFactor = 0.5

// maxVocabularyWords bounds the canonical words one question adds:
// each is a few terms whose postings are read.
const maxVocabularyWords = 24

// defaultVocabulary maps a colloquial word to the words documents use.
var defaultVocabulary = map[string][]string{
	// leave
	"年假": {"年休假"}, "休年假": {"年休假"}, "带薪假": {"年休假", "带薪"},
	"生娃": {"生育", "产假", "陪产假"}, "生孩子": {"生育", "产假", "陪产假"}, "怀孕": {"孕期", "产检", "产假"}, "坐月子": {"产假"},
	"老婆生": {"陪产假"}, "媳妇生": {"陪产假"}, "爱人生": {"陪产假"}, "当爸": {"陪产假"}, "带娃": {"育儿假"},
	"结婚": {"婚假"}, "领证": {"婚假"}, "办婚礼": {"婚假"},
	"去世": {"丧假"}, "过世": {"丧假"}, "奔丧": {"丧假"},
	"生病": {"病假"}, "看病": {"病假", "就医"}, "病了": {"病假"}, "住院": {"病假", "医疗"},
	"请假": {"休假", "假期"}, "调休": {"调休", "倒休"}, "补休": {"调休"}, "放假": {"节假日", "假期"},
	"国庆": {"法定节假日"}, "春节": {"法定节假日"}, "过年": {"春节", "法定节假日"}, "五一": {"劳动节", "法定节假日"}, "劳动节": {"法定节假日"},
	"元旦": {"法定节假日"}, "清明": {"法定节假日"}, "端午": {"法定节假日"}, "中秋": {"法定节假日"}, "节假日": {"法定节假日"},
	// attendance and hours
	"上班": {"工作时间", "考勤"}, "下班": {"工作时间", "考勤"}, "几点到": {"工作时间"}, "打卡": {"考勤", "打卡"},
	"迟到": {"考勤", "迟到"}, "早退": {"考勤", "早退"}, "旷工": {"考勤", "旷工"}, "加班费": {"加班", "加班工资"},
	"忘打卡": {"补卡", "考勤"}, "远程办公": {"居家办公", "vpn"}, "在家办公": {"居家办公", "远程办公"},
	// pay and benefits
	"工资": {"薪资", "薪酬", "发薪"}, "薪水": {"薪资", "薪酬"}, "发钱": {"发薪", "薪资"}, "到账": {"发薪", "发放"},
	"涨薪": {"调薪", "薪酬"}, "加薪": {"调薪", "薪酬"}, "升职": {"晋升", "职级"},
	"奖金": {"年终奖", "绩效"}, "年终": {"年终奖"}, "十三薪": {"年终奖"}, "双薪": {"年终奖"},
	"五险": {"社保", "社会保险"}, "五险一金": {"社保", "公积金"}, "医保": {"医疗保险"}, "养老": {"养老保险"},
	"餐补": {"伙食补助", "餐费补贴", "餐补"}, "饭补": {"伙食补助", "餐费补贴", "餐补"}, "饭钱": {"伙食补助", "餐费"},
	"早饭": {"早餐"}, "午饭": {"午餐"}, "晚饭": {"晚餐"}, "吃饭": {"食堂", "用餐"}, "饭堂": {"食堂"},
	"体检": {"健康体检"}, "福利": {"福利", "补贴"},
	// joining and leaving
	"新人": {"新员工", "入职"}, "刚来": {"新员工", "入职"}, "第一天": {"报到", "入职"}, "报到": {"报到", "入职"},
	"转正": {"试用期", "转正"}, "辞职": {"离职"}, "走人": {"离职"}, "裁员": {"组织优化", "离职"}, "离职证明": {"离职"},
	"合同": {"劳动合同"}, "竞业": {"竞业限制"},
	// travel and expenses
	"出差": {"差旅", "出差"}, "酒店": {"住宿"}, "住宿费": {"住宿"}, "住哪": {"住宿"},
	"打车": {"出租车", "网约车", "市内交通"}, "打的": {"出租车", "市内交通"}, "滴滴": {"网约车", "出租车"},
	"高铁": {"火车", "二等座"}, "火车": {"高铁", "二等座"}, "坐飞机": {"飞机", "机票", "经济舱"}, "机票": {"机票", "飞机"},
	"报多少": {"报销标准"}, "能报": {"报销"}, "贴票": {"发票", "报销"},
	"借钱": {"借款", "备用金"}, "预支": {"借款", "备用金"}, "付款": {"付款审批"}, "打款": {"付款", "支付"},
	"谁批": {"审批"}, "谁审批": {"审批"}, "批准": {"审批"},
	// IT
	"u盘": {"移动存储", "存储介质", "外接设备"}, "优盘": {"移动存储", "存储介质"}, "移动硬盘": {"移动存储", "存储介质"},
	"连不上": {"无法连接", "连接"}, "上不了网": {"网络", "无法连接"}, "内网": {"vpn", "内网"},
	"密码忘了": {"重置密码", "密码"}, "改密码": {"修改密码", "密码"}, "锁屏": {"锁屏", "屏幕"},
	"装软件": {"安装软件", "软件"}, "电脑坏了": {"报修", "it"}, "wifi": {"无线网络", "wifi"}, "无线": {"wifi"},
	"打印": {"打印机"}, "彩打": {"彩色打印"}, "复印": {"打印机", "复印"}, "刷卡": {"刷工牌", "工牌"}, "门禁": {"工牌", "门禁"},
	// office
	"开会": {"会议室"}, "订会议室": {"会议室预订"}, "约会议室": {"会议室预订"}, "领东西": {"领用", "办公用品"},
	"文具": {"办公用品"}, "通勤": {"班车"}, "停车": {"停车位", "停车"},
}

// Vocabulary is defaultVocabulary with a deployment's words
// (knowledge.vocabulary).
type Vocabulary struct {
	words map[string][]string
	keys  []string // words' keys, sorted: a question's expansion does not depend on map order
}

// NewVocabulary is the default vocabulary with extra's words added (a
// word of both gets the canonical words of both). Keys are matched
// NFKC-normalised and lowered, like the question.
func NewVocabulary(extra map[string][]string) *Vocabulary {
	v := &Vocabulary{words: make(map[string][]string, len(defaultVocabulary)+len(extra))}
	for k, ws := range defaultVocabulary {
		v.words[fold(k)] = ws
	}
	for k, ws := range extra {
		if k = fold(strings.TrimSpace(k)); k != "" {
			v.words[k] = append(append([]string(nil), v.words[k]...), ws...)
		}
	}
	v.keys = slices.Sorted(maps.Keys(v.words))
	return v
}

func fold(s string) string { return strings.ToLower(unorm.NFKC.String(s)) }

// expand adds to terms, the question's, the terms of the canonical words
// of each vocabulary word in query, at vocabularyFactor of their idf in
// x; a term the question wrote keeps its own weight.
func (v *Vocabulary) expand(x *termIndex, query string, terms []weighted) []weighted {
	if v == nil {
		return terms
	}
	q := fold(query)
	have := map[string]bool{}
	for _, t := range terms {
		have[t.term] = true
	}
	added := 0
	for _, word := range v.keys {
		if !strings.Contains(q, word) {
			continue
		}
		for _, c := range v.words[word] {
			if added >= maxVocabularyWords {
				return terms
			}
			added++
			// A word of several bigrams (市内交通: 市内 内交 交通) weighs as
			// one word, not as several: else the words a vocabulary entry
			// adds outweigh those the question wrote.
			cts := memory.Terms(c)
			for _, t := range cts {
				if !have[t] {
					have[t] = true
					terms = append(terms, weighted{t, vocabularyFactor * x.idf(t) / math.Sqrt(float64(len(cts)))})
				}
			}
		}
	}
	return terms
}

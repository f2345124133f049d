package console

import (
	"fmt"
	"html/template"
	"maps"
	"slices"
	"strings"
	"time"
)

// defaultLang is the interface language until an operator picks another.
const defaultLang = "zh"

// texts is the console's interface text per language. Every key exists in
// both (TestTextsComplete).
var texts = map[string]map[string]string{
	"zh": {
		"title": "Hermes 控制台", "overview": "概览", "conversations": "会话", "runs": "运行记录", "skills": "技能", "selftest": "渠道自检",
		"logout": "退出", "login": "登录", "username": "用户名", "password": "密码",
		"wrong_password": "用户名或密码错误", "too_many_logins": "登录尝试过于频繁，请在 %s后再试（为防止猜测密码，每次失败后需等待的时间会逐渐变长）", "n_seconds": "%d 秒", "n_minutes": "%d 分钟",
		"sign_in_first": "请先登录", "csrf_failed": "表单已失效（CSRF 校验失败），请刷新页面后重试", "admins_only": "仅管理员可执行此操作",
		"not_found": "未找到", "internal_error": "内部错误，详情见服务日志",
		"channel": "渠道", "account": "账号", "per_minute": "消息/分钟", "runs_count": "运行数", "failures": "失败",
		"pending": "待投递", "last_callback": "最近回调/帧", "last_error": "最近错误", "window": "统计窗口",
		"tokens": "访问令牌", "key": "键", "expires": "到期", "live": "有效", "expired": "已过期",
		"connections": "长连接", "holder": "持有副本", "queues": "任务队列", "queue": "队列", "depth": "积压", "oldest": "最早任务已等待",
		"none": "无", "user": "用户", "chat": "会话 ID", "period": "时间", "any": "不限", "search": "查询",
		"messages": "消息数", "last_active": "最近活跃", "open": "查看", "answer_run": "对应运行",
		"stop_reason": "停止原因", "started": "开始", "took": "耗时", "text": "内容", "attachment": "附件", "purged": "已过保留期，内容已清除", "model": "模型",
		"step_model": "模型调用", "step_tool": "工具调用", "prompt_tokens": "输入 tokens", "completion_tokens": "输出 tokens",
		"latency": "延迟", "arguments": "参数（已脱敏）", "observation": "观察结果", "status": "状态", "ok": "成功", "failed": "失败",
		"identity": "调用身份", "events": "事件（压缩/归档等）", "reply": "回复", "error": "错误", "stage": "阶段",
		"description": "说明", "executor": "执行方式", "access": "可用范围", "everyone": "所有人", "breaker": "熔断器",
		"calls": "调用数", "error_rate": "错误率", "p95": "p95 延迟", "last_errors": "最近错误",
		"check_reload": "检查并重新加载技能", "reloaded": "已重新加载", "not_reloaded": "检查发现错误，未重新加载", "findings": "检查结果",
		"target": "目标用户或群", "send_test": "发送测试消息", "raw_answer": "平台原始应答", "explanation": "解释",
		"selftest_no_channel": "该渠道不支持自检", "selftest_fill_in": "请填写账号和目标", "selftest_unknown_account": "未配置该账号",
		"selftest_intro": "通过所选渠道和账号向指定用户或群发送一条测试消息，并解释平台的应答。",
		"viewer_note":    "只读账号：不能重新加载技能或运行自检。", "session": "会话",
		"schedules": "定时报告", "schedule": "报告历史", "report": "报告", "owner": "创建人", "schedule_when": "时间安排",
		"time_zone": "时区", "next_fires": "接下来三次", "targets": "发送目标", "paused": "已暂停", "active": "运行中",
		"last_run": "最近一次运行", "never_ran": "尚未运行", "run_now": "立即运行", "pause": "暂停", "resume": "恢复",
		"history": "运行历史", "trigger": "触发方式", "fire_at": "计划时间", "finished": "结束", "deliveries": "各目标投递",
		"catch_up": "错过后补跑", "schedules_viewer_note": "只读账号：不能运行、暂停或恢复报告。",
		"last_refusal": "最近一次回调被拒", "times": "次",
		"undelivered": "条未送达", "undelivered_reply": "此回复未能送达用户（已放弃投递）",
		"nothing_received":  "Hermes 还没收到过这个账号的任何回调或消息：请检查平台后台的回调地址是否已保存且指向本服务（飞书保存地址时会发送 url_verification 挑战，企业微信会发 GET 校验；挑战没有被应答时地址保存不了）；长连接模式请看概览里的连接状态。",
		"refusal_signature": "签名校验失败（Token 或 EncodingAESKey 不对？钉钉为 AppSecret，飞书为 Encrypt Key）",
		"refusal_timestamp": "时间戳超出允许范围（服务器时钟不准，或请求被重放？）",
		"refusal_decrypt":   "解密失败（EncodingAESKey 或 Encrypt Key 不对？）",
		"refusal_token":     "Verification Token 不匹配（飞书的 verification_token 不对？）",
		"refusal_malformed": "请求格式不对（回调地址是否填到了别的平台或应用？）",
		"refusal_replay":    "签名已被另一条消息用过（请求被截获后重放？钉钉 HTTP 模式的签名不覆盖消息内容，涉及个人数据的技能请改用 Stream 模式）",
		"refusal_corp":      "消息的企业（senderCorpId）不是配置的 corp_id（corp_id 填错，或来自跨企业群？）",

		// The memories page.
		"memories": "记忆", "corp_id": "企业 ID", "memory_kind": "类型", "memory_kind_fact": "事实", "memory_kind_outcome": "办理结果",
		"memory_text": "内容（手机号、身份证号已脱敏）", "created": "创建", "last_used": "最近使用",
		"export_json": "导出 JSON", "delete_all": "全部删除", "memories_deleted": "已删除 %d 条记忆",
		"memories_intro":         "查看、导出或删除一位员工的长期记忆（例如应其个人信息请求）。每次查看、导出和删除都记入 memory_audit：操作人、操作、对象和条数。",
		"memories_fill_in":       "请填写用户 ID",
		"memories_purge_confirm": "确定删除该用户的全部记忆（包括已过期尚未清除的）？此操作不可撤销。",
		"memories_viewer_note":   "只读账号：只能查看（已脱敏），不能导出或删除。",
		"privacy_all":            "该员工的全部个人数据",
		"memory_kind_preference": "偏好",
		"alerts":                 "告警",
		"alerts_intro":           "每条规则每分钟检查一次：超过阈值时发一次告警，恢复时发一次恢复通知；静音期间只记录不发送。静音会记录操作人和原因。",
		"alerts_none":            "没有配置告警规则（alerts.rules）。",
		"alert_rule":             "规则", "alert_condition": "条件", "alert_incidents": "最近的事件",
		"alert_firing": "告警中", "alert_ok": "正常", "alert_silenced_until": "静音至",
		"alert_resolved": "已恢复", "alert_open": "未恢复", "alert_muted": "静音中",
		"alert_silence": "静音", "alert_unsilence": "取消静音", "alert_reason": "原因（可选）",
		"alerts_bad_duration": "静音时长不对。", "alerts_unknown_rule": "没有这条告警规则。",
		"privacy_intro":         "除记忆外，还包括其消息、对话历史、运行记录、发给他的回复、附件、待确认事项和他创建的定时报告。导出和删除都记入 memory_audit。",
		"privacy_export":        "导出全部数据（JSON）",
		"privacy_erase":         "删除全部数据",
		"privacy_erase_confirm": "确定删除该员工在 Hermes 中的全部数据（记忆、消息内容、对话、运行记录、回复、附件、他的定时报告）？统计所需的行会保留但不再含内容，用户 ID 换成随机代号。此操作不可撤销。",
		"privacy_erased":        "已删除或清空 %d 行",

		// The knowledge base: the run view's step and its pages.
		"step_knowledge": "知识库检索", "knowledge_cited": "已引用", "knowledge_not_cited": "未引用",
		"knowledge_nothing": "没有该提问者可见的文档段落匹配",
		"knowledge":         "知识库",
		"kb_intro":          "公司自己的文档（制度、手册、指南）。员工提问时，Hermes 只检索提问者可见的文档，并在回复末尾注明来源。",
		"kb_off":            "知识库已关闭（knowledge.enabled: false）。",
		"kb_file":           "文件", "kb_title": "标题", "kb_title_default": "默认为文件名", "kb_version": "版本", "kb_effective": "生效日期",
		"kb_departments": "限部门", "kb_users": "限用户", "kb_chats": "限群", "kb_upload": "上传", "kb_owner": "负责部门", "kb_owner_hint": "HR、IT…", "kb_corps_default": "默认 knowledge.corps",
		"kb_upload_note": "支持 Markdown、文本、HTML、PDF、DOCX、XLSX、CSV，单个文件不超过 %s MB；可见范围留空即 knowledge.corps 中的所有人。",
		"kb_viewer_note": "只读账号：只能查看，不能上传、删除或重建索引。",
		"kb_documents":   "文档", "kb_passages": "段落数", "kb_source": "来源", "kb_cited": "被引用次数",
		"kb_current": "生效中", "kb_superseded": "已被新版本取代", "kb_reindex": "重建索引", "kb_delete": "删除",
		"kb_delete_confirm": "确定删除该文档及其全部段落和向量？", "kb_none": "还没有文档。",
		"kb_gaps":       "没能回答的问题",
		"kb_gaps_intro": "最近 %d 天里检索了知识库、回答却没有引用任何段落的提问，按次数排序（手机号、身份证号已脱敏）。",
		"kb_question":   "问题", "kb_asked": "次数", "kb_unmatched": "其中无匹配段落", "kb_last_asked": "最近一次",
		"kb_never_cited": "从未被引用的文档（生效中）",
		"kb_added":       "已添加《%s》：%d 个段落。", "kb_unchanged": "《%s》内容未变，没有重复添加。",
		"kb_deleted": "已删除《%s》及其段落和向量。", "kb_reindexed": "已重建索引：%d 个段落。",
		"kb_refused":             "已拒绝 %s：%s",
		"kb_refused_bomb":        "解压后超过大小上限（疑似压缩炸弹）",
		"kb_refused_encrypted":   "文件有密码保护",
		"kb_refused_unsupported": "不支持的文件格式",
		"kb_refused_empty":       "没有可提取的文字（扫描件？）",
		"kb_refused_corrupt":     "文件损坏或无法解析",
		"kb_refused_invalid":     "缺少标题，或限定了部门、用户、群却没有配置企业（knowledge.corps）",
		"kb_refused_unreadable":  "文件无法读取（例如文字超过一百万字）",
		"kb_refused_too_large":   "文件超过 %g MB 的上限",
		"kb_no_file":             "请选择要上传的文件",
		"kb_bad_form":            "上传表单无法解析",
		"kb_bad_effective":       "生效日期的格式应为 YYYY-MM-DD",

		// The charts (overview and skills) and the export.
		"chart_period": "趋势范围", "chart_period_1h": "最近 1 小时（按分钟）", "chart_period_24h": "最近 24 小时", "chart_period_7d": "最近 7 天", "chart_period_30d": "最近 30 天", "chart_period_custom": "自选日期", "chart_show": "显示",
		"chart_custom_invalid": "日期范围无效（开始不晚于结束，最多 92 天），已显示最近 24 小时。",
		"chart_bucket":         "时段", "chart_day": "日期", "chart_omitted": "其余 %d 个时段均为 0，未列出。", "chart_drill": "点击图中的时段或表中的数字，查看对应的运行记录。", "chart_refresh": "每分钟自动刷新。",
		"chart_refused": "被拒绝的回调（按渠道 / 账号）", "chart_refused_note": "签名、时间戳、解密等校验未通过而被拒绝的平台回调：可能是回调地址泄露后被人伪造请求，或平台密钥已更换而配置未更新。账号表中列出最近一次的原因。",
		"costs": "模型费用（按账号、按部门）", "costs_period": "本时段", "costs_month": "本月至今", "costs_budget": "月度预算", "costs_used": "已用",
		"costs_department": "部门", "costs_no_department": "（未知部门）",
		"costs_note": "费用按 costs.models 的单价估算；预算在 costs.budgets 中按账号配置，已用达到 80% 标红，告警规则 when: budget 可在用完之前提醒。部门来自提问员工在通讯录中的部门，一人属于多个部门时每个部门都计入。",
		"rating":     "员工评价", "rating_up": "有帮助", "rating_down": "没帮到", "rating_none": "未评价",
		"chart_ratings": "员工对回答的评价（按天）", "chart_rating_rate": "好评率 %", "chart_ratings_note": "员工在回答后一小时内发送 👍 或 👎 即为评价；同一回答以最后一次为准。",
		"headline_messages": "消息数", "headline_failures": "失败率", "headline_p95": "回答耗时 p95", "headline_cost": "模型费用（估算）",
		"headline_change": "较上一时段 %s", "headline_points": "较上一时段 %s 个百分点", "headline_no_prior": "上一时段无数据", "headline_unpriced": "未配置价格",
		"drill_filter": "仅显示", "drill_clear": "清除筛选",
		"breaker_closed": "正常", "breaker_open": "熔断中", "breaker_half-open": "半开试探中", "chart_no_data": "这段时间没有数据",
		"chart_traffic": "每时段消息数（按渠道 / 账号）", "chart_stops": "每时段运行数（按停止原因）",
		"chart_latency": "回答耗时 p50 / p95（毫秒）", "chart_latency_note": "从开始运行到回答写入，不含排队时间。",
		"chart_given_up": "放弃投递的回复（按渠道 / 账号）", "chart_tokens": "每天模型 tokens（按模型）",
		"chart_cost": "估算费用", "chart_total": "合计", "chart_unpriced": "未在 costs.models 中配置价格的模型不计费用（显示为 –）。",
		"chart_skill_calls": "每时段技能调用数", "chart_skill_errors": "技能错误率（%）", "chart_skill_p95": "技能 p95 延迟（毫秒）",
		"chart_skill_breaker": "熔断器打开次数与被拒绝的调用", "chart_breaker_openings": "打开次数", "chart_breaker_refused": "被拒绝的调用",
		"chart_skill": "技能", "chart_skill_breaker_note": "柱子是每个时段熔断器打开的次数（连续失败后打开，或半开试探失败后再次打开），没有调用碰上的打开也会标出。打开期间调用不会发到后端而是直接失败；下表列出熔断器打开或拒绝了调用的每个时段。",
		"stop_finished": "完成", "stop_max_steps": "超出步数", "stop_timeout": "超时", "stop_repeated_call": "重复调用", "stop_idle": "无进展",
		"stop_fatal_tool_error": "技能致命错误", "stop_needs_input": "需要补充信息", "stop_awaiting_confirmation": "等待确认",
		"stop_plan_refused": "无法规划", "stop_error": "模型错误", "stop_canceled": "已取消",
		"export": "导出", "export_what": "内容", "export_from": "从（含）", "export_to": "到（含）", "export_csv": "导出 CSV",
		"export_note": "最多 31 天、100000 行；手机号、身份证号已脱敏。", "export_bad_range": "请填写有效的日期范围（最多 31 天，开始不晚于结束）",
		"export_truncated": "已截断：超过行数上限，请缩小时间范围",
	},
	"en": {
		"title": "Hermes console", "overview": "Overview", "conversations": "Conversations", "runs": "Runs", "skills": "Skills", "selftest": "Channel self-test",
		"logout": "Sign out", "login": "Sign in", "username": "Username", "password": "Password",
		"wrong_password": "Wrong username or password", "too_many_logins": "Too many sign-in attempts; try again in %s (to stop password guessing, the wait grows after each failure)", "n_seconds": "%d seconds", "n_minutes": "%d minutes",
		"sign_in_first": "Sign in first", "csrf_failed": "The form expired (CSRF check failed); reload the page and try again", "admins_only": "Only admins may do this",
		"not_found": "Not found", "internal_error": "Internal error; see the server log",
		"channel": "Channel", "account": "Account", "per_minute": "Messages/min", "runs_count": "Runs", "failures": "Failures",
		"pending": "Pending deliveries", "last_callback": "Last callback/frame", "last_error": "Last error", "window": "Window",
		"tokens": "Access tokens", "key": "Key", "expires": "Expires", "live": "live", "expired": "expired",
		"connections": "Long connections", "holder": "Held by replica", "queues": "Job queues", "queue": "Queue", "depth": "Depth", "oldest": "Oldest job waiting",
		"none": "none", "user": "User", "chat": "Chat id", "period": "Period", "any": "any", "search": "Search",
		"messages": "Messages", "last_active": "Last active", "open": "Open", "answer_run": "Run",
		"stop_reason": "Stop reason", "started": "Started", "took": "Took", "text": "Text", "attachment": "Attachment", "purged": "past retention, bytes purged", "model": "Model",
		"step_model": "Model call", "step_tool": "Tool call", "prompt_tokens": "Prompt tokens", "completion_tokens": "Completion tokens",
		"latency": "Latency", "arguments": "Arguments (masked)", "observation": "Observation", "status": "Status", "ok": "ok", "failed": "failed",
		"identity": "Identity sent", "events": "Events (compression, archive, ...)", "reply": "Reply", "error": "Error", "stage": "Stage",
		"description": "Description", "executor": "Executor", "access": "Who may use it", "everyone": "everyone", "breaker": "Breaker",
		"calls": "Calls", "error_rate": "Error rate", "p95": "p95 latency", "last_errors": "Last errors",
		"check_reload": "Check and reload skills", "reloaded": "Reloaded", "not_reloaded": "The check found errors; nothing reloaded", "findings": "Findings",
		"target": "Target user or chat", "send_test": "Send a test message", "raw_answer": "Platform's raw answer", "explanation": "Explanation",
		"selftest_no_channel": "This channel cannot run a self-test", "selftest_fill_in": "Fill in the account and the target", "selftest_unknown_account": "No such account is configured",
		"selftest_intro": "Sends a test message through the chosen channel and account to a user or chat, and explains the platform's answer.",
		"viewer_note":    "Read-only account: cannot reload skills or run the self-test.", "session": "Session",
		"schedules": "Schedules", "schedule": "Report history", "report": "Report", "owner": "Owner", "schedule_when": "Schedule",
		"time_zone": "Time zone", "next_fires": "Next 3 runs", "targets": "Targets", "paused": "paused", "active": "active",
		"last_run": "Last run", "never_ran": "never ran", "run_now": "Run now", "pause": "Pause", "resume": "Resume",
		"history": "History", "trigger": "Trigger", "fire_at": "Scheduled for", "finished": "Finished", "deliveries": "Deliveries per target",
		"catch_up": "Catch-up", "schedules_viewer_note": "Read-only account: cannot run, pause or resume reports.",
		"last_refusal": "Last refused callback", "times": "times",
		"undelivered": "undelivered", "undelivered_reply": "This reply never reached the user (delivery given up)",
		"nothing_received":  "No callback or message of this account has ever reached Hermes: check that the callback URL is saved in the platform's console and points here (Feishu sends a url_verification challenge when the URL is saved, WeCom a GET check; an unanswered challenge means the URL cannot be saved); for long connections see the connection state on the overview.",
		"refusal_signature": "signature check failed (wrong Token or EncodingAESKey? DingTalk: AppSecret, Feishu: Encrypt Key)",
		"refusal_timestamp": "timestamp outside the allowed window (server clock off, or a replayed request?)",
		"refusal_decrypt":   "decryption failed (wrong EncodingAESKey or Encrypt Key?)",
		"refusal_token":     "verification token mismatch (wrong Feishu verification_token?)",
		"refusal_malformed": "not the platform's format (is the callback URL set on another platform or app?)",
		"refusal_replay":    "signature already used by another message (a captured request sent again? DingTalk's HTTP signature does not cover the body; use Stream mode for skills touching personal data)",
		"refusal_corp":      "the message's corp (senderCorpId) is not the configured corp_id (wrong corp_id, or a group shared with another corp?)",

		// The memories page.
		"memories": "Memories", "corp_id": "Corp id", "memory_kind": "Kind", "memory_kind_fact": "fact", "memory_kind_outcome": "outcome",
		"memory_text": "Text (mobile and ID numbers masked)", "created": "Created", "last_used": "Last used",
		"export_json": "Export JSON", "delete_all": "Delete all", "memories_deleted": "Deleted %d memories",
		"memories_intro":         "See, export or delete one employee's long-term memories (for their personal-information request, say). Every view, export and deletion is recorded in memory_audit: who, what, whose and how many.",
		"memories_fill_in":       "Fill in the user id",
		"memories_purge_confirm": "Delete every memory of this user (expired ones not yet purged included)? This cannot be undone.",
		"memories_viewer_note":   "Read-only account: can look (masked), cannot export or delete.",
		"privacy_all":            "Everything held about this employee",
		"memory_kind_preference": "preference",
		"alerts":                 "Alerts",
		"alerts_intro":           "Every rule is checked each minute: one alert when it goes over its threshold, one message when it resolves; while silenced, incidents are recorded and not posted. Silences are recorded with who and why.",
		"alerts_none":            "No alert rules are configured (alerts.rules).",
		"alert_rule":             "Rule", "alert_condition": "Condition", "alert_incidents": "Latest incidents",
		"alert_firing": "firing", "alert_ok": "ok", "alert_silenced_until": "silenced until",
		"alert_resolved": "resolved", "alert_open": "open", "alert_muted": "silenced",
		"alert_silence": "Silence", "alert_unsilence": "lift the silence", "alert_reason": "reason (optional)",
		"alerts_bad_duration": "That silence duration is not valid.", "alerts_unknown_rule": "There is no such alert rule.",
		"privacy_intro":         "Besides memories: their messages, conversation history, run traces, replies to them, attachments, pending confirmations and the scheduled reports they created. Exports and erasures are recorded in memory_audit.",
		"privacy_export":        "Export everything (JSON)",
		"privacy_erase":         "Erase everything",
		"privacy_erase_confirm": "Erase everything Hermes holds about this employee (memories, message content, conversation, run traces, replies, attachments, their scheduled reports)? Rows the counts need stay, without content, under a random pseudonym. This cannot be undone.",
		"privacy_erased":        "Deleted or emptied %d rows",

		// The knowledge base: the run view's step and its pages.
		"step_knowledge": "Knowledge search", "knowledge_cited": "cited", "knowledge_not_cited": "not cited",
		"knowledge_nothing": "No passage the asker may see matched",
		"knowledge":         "Knowledge base",
		"kb_intro":          "The company's own documents (policies, handbooks, guides). When an employee asks, Hermes searches only the documents they may see and names its sources at the end of the reply.",
		"kb_off":            "The knowledge base is off (knowledge.enabled: false).",
		"kb_file":           "File", "kb_title": "Title", "kb_title_default": "default: the file name", "kb_version": "Version", "kb_effective": "Effective",
		"kb_departments": "Departments only", "kb_users": "Users only", "kb_chats": "Chats only", "kb_upload": "Upload", "kb_owner": "Owner", "kb_owner_hint": "HR, IT…", "kb_corps_default": "default: knowledge.corps",
		"kb_upload_note": "Markdown, text, HTML, PDF, DOCX, XLSX, CSV, at most %s MB a file; leave the audience empty for everyone in knowledge.corps.",
		"kb_viewer_note": "Read-only account: can look, cannot upload, delete or re-index.",
		"kb_documents":   "Documents", "kb_passages": "Passages", "kb_source": "Source", "kb_cited": "Cited",
		"kb_current": "in force", "kb_superseded": "superseded", "kb_reindex": "Re-index", "kb_delete": "Delete",
		"kb_delete_confirm": "Delete this document with all its passages and vectors?", "kb_none": "No documents yet.",
		"kb_gaps":       "Questions not answered",
		"kb_gaps_intro": "Questions of the last %d days whose answer searched the documents and cited no passage, most asked first (mobile and ID numbers masked).",
		"kb_question":   "Question", "kb_asked": "Asked", "kb_unmatched": "of which nothing matched", "kb_last_asked": "Last asked",
		"kb_never_cited": "Documents in force never cited",
		"kb_added":       "Added 《%s》: %d passages.", "kb_unchanged": "《%s》 is unchanged; not added again.",
		"kb_deleted": "Deleted 《%s》 with its passages and vectors.", "kb_reindexed": "Re-indexed: %d passages.",
		"kb_refused":             "Refused %s: %s",
		"kb_refused_bomb":        "over the size limits once unpacked (a zip bomb?)",
		"kb_refused_encrypted":   "password-protected",
		"kb_refused_unsupported": "not a supported format",
		"kb_refused_empty":       "no text to extract (a scan?)",
		"kb_refused_corrupt":     "damaged or cannot be parsed",
		"kb_refused_invalid":     "no title, or limited to departments, users or chats without a corp (knowledge.corps)",
		"kb_refused_unreadable":  "cannot be read (over a million characters, say)",
		"kb_refused_too_large":   "over the %g MB limit",
		"kb_no_file":             "Choose a file to upload",
		"kb_bad_form":            "The upload form cannot be read",
		"kb_bad_effective":       "The effective date is YYYY-MM-DD",

		// The charts (overview and skills) and the export.
		"chart_period": "Trends over", "chart_period_1h": "last hour (by minute)", "chart_period_24h": "last 24 hours", "chart_period_7d": "last 7 days", "chart_period_30d": "last 30 days", "chart_period_custom": "chosen days", "chart_show": "Show",
		"chart_custom_invalid": "That range of days is not valid (from not after to, at most 92 days); showing the last 24 hours.",
		"chart_bucket":         "Period", "chart_day": "Day", "chart_omitted": "The other %d periods are all 0 and not listed.", "chart_drill": "Click a period in a chart or a number in a table to see its runs.", "chart_refresh": "Refreshes every minute.",
		"chart_refused": "Refused callbacks (by channel / account)", "chart_refused_note": "Platform callbacks refused by a check (signature, timestamp, decryption …): a leaked callback URL being forged against, or a rotated platform secret not yet in the config. The accounts table gives the latest reason.",
		"costs": "Model cost (by account, by department)", "costs_period": "This period", "costs_month": "This month so far", "costs_budget": "Monthly budget", "costs_used": "Used",
		"costs_department": "Department", "costs_no_department": "(unknown department)",
		"costs_note": "Costs are estimated at costs.models' prices; budgets are set per account in costs.budgets, marked red from 80% used, and an alert rule with when: budget warns before one is spent. Departments are the asker's in the directory; an employee in several departments counts in each.",
		"rating":     "Employee's rating", "rating_up": "helpful", "rating_down": "not helpful", "rating_none": "not rated",
		"chart_ratings": "Employees' ratings of answers (per day)", "chart_rating_rate": "👍 share %", "chart_ratings_note": "An employee rates an answer by sending 👍 or 👎 within an hour of it; the last rating of an answer counts.",
		"headline_messages": "Messages", "headline_failures": "Failure rate", "headline_p95": "Answer time p95", "headline_cost": "Model cost (estimated)",
		"headline_change": "%s on the period before", "headline_points": "%s points on the period before", "headline_no_prior": "no data in the period before", "headline_unpriced": "no prices configured",
		"drill_filter": "Showing only", "drill_clear": "clear",
		"breaker_closed": "closed", "breaker_open": "open", "breaker_half-open": "half-open", "chart_no_data": "No data in this period",
		"chart_traffic": "Messages per period (by channel / account)", "chart_stops": "Runs per period (by stop reason)",
		"chart_latency": "Answer time p50 / p95 (ms)", "chart_latency_note": "From the run's start to its stored answer; queueing before it not included.",
		"chart_given_up": "Replies given up undelivered (by channel / account)", "chart_tokens": "Model tokens per day (by model)",
		"chart_cost": "Estimated cost", "chart_total": "Total", "chart_unpriced": "Models without a price in costs.models have no cost (shown as –).",
		"chart_skill_calls": "Skill calls per period", "chart_skill_errors": "Skill error rate (%)", "chart_skill_p95": "Skill p95 latency (ms)",
		"chart_skill_breaker": "Breaker openings and refused calls", "chart_breaker_openings": "Openings", "chart_breaker_refused": "Refused calls",
		"chart_skill": "Skill", "chart_skill_breaker_note": "The bars are how often a breaker opened in each period (after repeated failures, or again after a failed half-open probe), also when no call ran into it. While open, calls fail without reaching the backend; the table lists every period in which a breaker opened or refused calls.",
		"stop_finished": "finished", "stop_max_steps": "max steps", "stop_timeout": "timeout", "stop_repeated_call": "repeated call", "stop_idle": "idle",
		"stop_fatal_tool_error": "fatal skill error", "stop_needs_input": "needs input", "stop_awaiting_confirmation": "awaiting confirmation",
		"stop_plan_refused": "plan refused", "stop_error": "model error", "stop_canceled": "canceled",
		"export": "Export", "export_what": "What", "export_from": "From (incl.)", "export_to": "To (incl.)", "export_csv": "Export CSV",
		"export_note": "At most 31 days and 100000 rows; mobile and ID numbers masked.", "export_bad_range": "Give a valid range of days (at most 31, from not after to)",
		"export_truncated": "truncated: more rows than the limit; narrow the range",
	},
}

// withTexts is the default text of each language with over on top.
func withTexts(over map[string]map[string]string) map[string]map[string]string {
	out := make(map[string]map[string]string, len(texts))
	for lang, def := range texts {
		m := make(map[string]string, len(def))
		for k, v := range def {
			m[k] = v
		}
		for k, v := range over[lang] {
			m[k] = v
		}
		out[lang] = m
	}
	return out
}

// CheckTexts refuses overrides of a language or key the console does not
// have, naming the first (sorted) as under messages.console.
func CheckTexts(over map[string]map[string]string) error {
	for _, lang := range slices.Sorted(maps.Keys(over)) {
		def, ok := texts[lang]
		if !ok {
			return fmt.Errorf("messages.console.%s: unknown language (the console has %s)", lang, strings.Join(slices.Sorted(maps.Keys(texts)), ", "))
		}
		for _, k := range slices.Sorted(maps.Keys(over[lang])) {
			if _, ok := def[k]; !ok {
				return fmt.Errorf("messages.console.%s.%s: unknown key", lang, k)
			}
		}
	}
	return nil
}

// funcs are the templates' helpers.
var funcs = template.FuncMap{
	"when": func(t time.Time) string {
		if t.IsZero() || t.Unix() <= 0 {
			return "–"
		}
		return t.Local().Format("2006-01-02 15:04:05")
	},
	"join": strings.Join,
	// whenp is when for a time that may not have happened yet.
	"whenp": func(t *time.Time) string {
		if t == nil {
			return "–"
		}
		return t.Local().Format("2006-01-02 15:04:05")
	},
	"took": duration,
}

// Catalogue is the console's whole catalogue, every language and key, with
// over (messages.console) on top: what `hermes words` prints.
func Catalogue(over map[string]map[string]string) map[string]map[string]string {
	return withTexts(over)
}

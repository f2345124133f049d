package main

import (
	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/dingtalk"
	"github.com/hermes-gw/hermes/channels/feishu"
	"github.com/hermes-gw/hermes/channels/wecom"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/alerts"
	"github.com/hermes-gw/hermes/gateway/knowledge"
	"github.com/hermes-gw/hermes/gateway/memory"
	"github.com/hermes-gw/hermes/gateway/openaiapi"
	"github.com/hermes-gw/hermes/gateway/privacy"
	"github.com/hermes-gw/hermes/gateway/ratings"
	"github.com/hermes-gw/hermes/gateway/reports"
	"github.com/hermes-gw/hermes/gateway/router"
	"github.com/hermes-gw/hermes/gateway/skillfiles"
)

// platforms are the chat platforms this binary serves, one line each; each
// is configured by its own top-level section of hermes.yaml.
var platforms = []channels.Platform{
	wecom.Platform,
	dingtalk.Platform,
	feishu.Platform,
}

// newFeatures are the parts of Hermes beside the pipeline that a gateway
// runs, one line each, made anew for each gateway this process builds.
// The operators' pages (gateway/admin) are added by serve, the one command
// that serves them.
func newFeatures() []gateway.Feature {
	return []gateway.Feature{
		reports.New(),
		openaiapi.New(),
		router.New(),
		skillfiles.New(),
		memory.New(),
		ratings.New(),
		knowledge.New(),
		privacy.New(),
		alerts.New(),
	}
}

package wxbiz_test

import (
	"strings"
	"testing"

	"github.com/hermes-gw/hermes/channels/wecom/wxbiz"
)

func TestRedact(t *testing.T) {
	in := `Get "https://qyapi.weixin.qq.com/cgi-bin/gettoken?corpid=ww1&corpsecret=Abc-123_xyz": dial tcp: refused; ` +
		`http post error : uri=http://h/cgi-bin/message/send?access_token=T0k3n , statusCode=502; raw Abc-123_xyz`
	got := wxbiz.Redact(in, "Abc-123_xyz")
	for _, leak := range []string{"Abc-123_xyz", "T0k3n"} {
		if strings.Contains(got, leak) {
			t.Fatalf("redact left %q in %s", leak, got)
		}
	}
	for _, keep := range []string{"corpid=ww1", "corpsecret=REDACTED", "access_token=REDACTED", "statusCode=502"} {
		if !strings.Contains(got, keep) {
			t.Fatalf("redact lost %q: %s", keep, got)
		}
	}
}

package skills_test

import (
	"testing"

	"github.com/hermes-gw/hermes/skills"
)

func TestRegistrySpec(t *testing.T) {
	weekly := &skills.Skill{Name: "it_ticket_weekly", DisplayName: "上周工单", Description: "weekly", Endpoint: "/w", ReadOnly: true}
	reg, err := skills.NewRegistry(unsigned(weekly), skills.Options{BaseURL: "http://it.internal"})
	if err != nil {
		t.Fatal(err)
	}
	t.Run("OK", func(t *testing.T) {
		if got := reg.Spec("it_ticket_weekly"); got.Name != "it_ticket_weekly" || got.DisplayName != "上周工单" || !got.ReadOnly {
			t.Errorf("spec = %+v", got)
		}
	})
	t.Run("Removed", func(t *testing.T) {
		if got := reg.Spec("gone"); got.Name != "gone" || got.DisplayName != "" || got.ReadOnly {
			t.Errorf("spec of a removed skill = %+v, want only its name", got)
		}
	})
}
